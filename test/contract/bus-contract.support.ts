/** Fixtures and helpers of the bus contract suite. */
import { randomUUID } from 'node:crypto';
import type { Bus, ConsumerHandle, IncomingMessage } from '../../src/core/bus.port.js';

/** How a contract run reaches an adapter. Every test opens its own bus and closes it. */
export interface BusFixture {
  open(): Promise<Bus>;
  /** Called once after the last test. */
  dispose?(): Promise<void>;
}

/** A topic or group name no other test (or earlier run on the same broker) uses. */
export function uniqueName(prefix: string): string {
  return `contract.${prefix}.${randomUUID().slice(0, 8)}`;
}

export interface Gate {
  readonly promise: Promise<void>;
  open(): void;
}

export function gate(): Gate {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/** A consumer that records what it was handed and what it finished handling. */
export interface Recorder {
  readonly handle: ConsumerHandle;
  /** Every delivery, in the order the handler was called (duplicates included). */
  readonly received: IncomingMessage[];
  /** Deliveries whose handler resolved (so the bus may commit them). */
  readonly completed: IncomingMessage[];
  readonly crashes: unknown[];
  values(list?: IncomingMessage[]): Set<string>;
}

export interface RecordOptions {
  groupId: string;
  topic: string;
  concurrency?: number;
  /**
   * Runs inside the handler after the delivery was recorded (`received` includes it); a
   * rejection fails the message.
   */
  during?: (message: IncomingMessage, received: readonly IncomingMessage[]) => Promise<void> | void;
}

export async function recordConsumer(bus: Bus, options: RecordOptions): Promise<Recorder> {
  const received: IncomingMessage[] = [];
  const completed: IncomingMessage[] = [];
  const crashes: unknown[] = [];
  const handle = await bus.consume({
    groupId: options.groupId,
    topic: options.topic,
    concurrency: options.concurrency,
    handle: async (message) => {
      received.push(message);
      await options.during?.(message, received);
      completed.push(message);
    },
    onCrash: (error) => crashes.push(error),
  });
  return {
    handle,
    received,
    completed,
    crashes,
    values: (list = received) => new Set(list.map((message) => message.value)),
  };
}

/** `count` messages spread over `keys` keys, values `v-<n>` with n in publish order. */
export function messages(count: number, keys: number, headers?: Record<string, string>) {
  return Array.from({ length: count }, (_, n) => ({ key: `key-${n % keys}`, value: `v-${n}`, headers }));
}
