import { Signal } from './signal.js';

export interface StoredMessage {
  key: string;
  value: string;
  headers: Record<string, string>;
}

/**
 * A topic's partitions: append-only arrays, the index being the offset. Nothing is ever
 * trimmed, so memory grows with every message published since start-up: fine for the
 * embedded mode and tests, not for a long-lived production process (use Kafka there).
 */
export class TopicLog {
  readonly partitions: StoredMessage[][];
  /** Notified after every append, so idle partition runners look again. */
  readonly appended = new Signal();

  constructor(
    readonly name: string,
    partitionCount: number,
  ) {
    this.partitions = Array.from({ length: partitionCount }, () => []);
  }

  append(message: StoredMessage): void {
    this.partitions[partitionFor(message.key, this.partitions.length)].push(message);
  }
}

/** Same key, same partition: FNV-1a (32-bit) of the key's UTF-8 bytes. */
export function partitionFor(key: string, partitionCount: number): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(key, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % partitionCount;
}
