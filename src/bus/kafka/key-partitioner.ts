import { randomBytes } from 'node:crypto';
import type { ICustomPartitioner } from 'kafkajs';

const M = 0x5bd1e995;
const SEED = 0x9747b28c;

/**
 * Kafka's murmur2 (the Java client's `Utils.murmur2`) on 32-bit integers. kafkajs' own computes
 * the same value with BigInt-backed 64-bit longs, a few dozen allocations per key: at two
 * messages per execution it was the process's largest single source of garbage.
 */
export function murmur2(data: Buffer): number {
  const length = data.length;
  let h = SEED ^ length;
  const whole = length - (length % 4);
  for (let i = 0; i < whole; i += 4) {
    let k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  // The last one to three bytes.
  const rest = length % 4;
  if (rest === 3) h ^= data[whole + 2] << 16;
  if (rest >= 2) h ^= data[whole + 1] << 8;
  if (rest >= 1) h = Math.imul(h ^ data[whole], M);
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h;
}

const toPositive = (x: number) => x & 0x7fffffff;

/**
 * kafkajs' DefaultPartitioner (the Java client's pre-2.4 default) with the cheaper hash: a
 * message's own partition, else its key's hash, else round robin over partitions with a leader.
 * Every key lands where kafkajs would put it, so per-key order holds across an upgrade.
 */
export const keyPartitioner: ICustomPartitioner = () => {
  const counters = new Map<string, number>();
  return ({ topic, partitionMetadata, message }) => {
    if (message.partition !== null && message.partition !== undefined) return message.partition;
    const partitions = partitionMetadata.length;
    if (message.key !== null && message.key !== undefined) {
      const key = Buffer.isBuffer(message.key) ? message.key : Buffer.from(String(message.key));
      return toPositive(murmur2(key)) % partitions;
    }
    const counter = (counters.get(topic) ?? randomBytes(4).readUInt32BE(0)) + 1;
    counters.set(topic, counter);
    const available = partitionMetadata.filter((p) => p.leader >= 0);
    return available.length > 0 ? available[toPositive(counter) % available.length].partitionId : toPositive(counter) % partitions;
  };
};
