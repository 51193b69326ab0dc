import type { Bus } from '../core/bus.port.js';
import type { ConsumerLagSample, Metrics } from '../core/metrics.port.js';

/**
 * Reports, at each scrape, how far consumer group `groupId` is behind on `topic` (end offsets
 * minus committed offsets, summed over partitions), when the bus is Kafka; nothing on the
 * in-process bus, whose lag is not a deployment's concern. Returns the unregister function.
 */
export function reportConsumerLag(metrics: Pick<Metrics, 'consumerLag'>, bus: Bus, groupId: string, topic: string): () => void {
  if (!bus.durable) return () => undefined;
  return metrics.consumerLag(async (): Promise<ConsumerLagSample[]> => {
    const [ends, committed] = await Promise.all([bus.endOffsets(topic), bus.committedOffsets(groupId, topic)]);
    let behind = 0n;
    for (const [partition, end] of ends) {
      const at = committed.get(partition) ?? 0n;
      if (end > at) behind += end - at;
    }
    return [{ group: groupId, topic, messages: Number(behind) }];
  });
}
