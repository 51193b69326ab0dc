import { randomBytes, randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import kafkajs, { type PartitionMetadata } from 'kafkajs';
import { keyPartitioner, murmur2 } from './key-partitioner.js';

const { Partitioners } = kafkajs;

function metadata(count: number): PartitionMetadata[] {
  return Array.from({ length: count }, (_, partitionId) => ({
    partitionId,
    leader: 1,
    replicas: [1],
    isr: [1],
    offlineReplicas: [],
    partitionErrorCode: 0,
  }));
}

describe('the key partitioner', () => {
  it('hashes as Kafka clients do (the Java client’s murmur2 test vectors)', () => {
    // From Apache Kafka's UtilsTest.testMurmur2.
    const vectors: [string, number][] = [
      ['21', -973932308],
      ['foobar', -790332482],
      ['a-little-bit-long-string', -985981536],
      ['a-little-bit-longer-string', -1486304829],
      ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
      ['abc', 479470107],
    ];
    for (const [key, hash] of vectors) expect(murmur2(Buffer.from(key))).toBe(hash);
  });

  it('puts every key in the partition kafkajs’ default partitioner chose', () => {
    const ours = keyPartitioner();
    const theirs = Partitioners.DefaultPartitioner();
    const keys: (string | Buffer)[] = [];
    for (let i = 0; i < 2_000; i++) keys.push(randomUUID(), randomBytes(i % 67), `ключ-${i}-✓`.repeat((i % 5) + 1), '');
    for (const [index, key] of keys.entries()) {
      const partitionMetadata = metadata((index % 64) + 1);
      const args = { topic: 't', partitionMetadata, message: { key, value: 'v' } };
      expect([key, ours(args)]).toEqual([key, theirs(args)]);
    }
  });

  it('keeps a message’s own partition, and spreads keyless messages over partitions with a leader', () => {
    const partition = keyPartitioner();
    expect(partition({ topic: 't', partitionMetadata: metadata(4), message: { key: 'k', value: 'v', partition: 3 } })).toBe(3);
    const partitionMetadata = metadata(4).map((p) => (p.partitionId === 2 ? { ...p, leader: -1 } : p));
    const chosen = new Set(Array.from({ length: 12 }, () => partition({ topic: 't', partitionMetadata, message: { value: 'v' } })));
    expect([...chosen].sort()).toEqual([0, 1, 3]);
  });
});
