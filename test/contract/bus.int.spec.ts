import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { InProcessBus } from '../../src/bus/in-process/in-process-bus.js';
import { BusPublishError, KafkaBus } from '../../src/bus/kafka/kafka-bus.js';
import { createLogger, type Logger } from '../../src/core/logger.js';
import { startKafkaBroker, testKafkaBrokers, type KafkaBroker } from '../support/kafka-broker.js';
import { eventually, sleep } from '../support/eventually.js';
import { recordConsumer, uniqueName } from './bus-contract.support.js';
import { busContract } from './bus.contract.js';

/** kafkajs complains loudly about every refused connection while a broker restarts: keep the lines, print none. */
function quietLogger(lines: string[] = []): Logger {
  return createLogger({ level: 'warn', write: (line) => void lines.push(line) });
}

busContract('in-process', async () => ({ open: async () => new InProcessBus() }));

busContract('Kafka', async () => {
  const brokers = testKafkaBrokers();
  return { open: async () => new KafkaBus({ brokers, logger: quietLogger() }) };
});

describe('Kafka bus without a reachable broker', () => {
  it('rejects a publish once its timeout has passed, rather than dropping it', async () => {
    const bus = new KafkaBus({ brokers: [`127.0.0.1:${await closedPort()}`], logger: quietLogger(), publishTimeoutMs: 1_000 });
    try {
      const error = await bus.publish('flostra.nowhere.v1', [{ key: 'k', value: 'v' }]).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(BusPublishError);
      expect(error).toMatchObject({ code: 'unavailable', topic: 'flostra.nowhere.v1' });
    } finally {
      await bus.close();
    }
  });
});

describe('Kafka bus across broker restarts', () => {
  let broker: KafkaBroker;

  beforeAll(async () => {
    // Its own broker: the run's shared one must not go down under other suites.
    broker = await startKafkaBroker({ reuseExisting: false });
  }, 120_000);

  afterAll(async () => {
    await broker?.stop();
  });

  it('keeps a member whose handler runs longer than its session timeout in the group', async () => {
    const bus = new KafkaBus({ brokers: broker.brokers, logger: quietLogger(), sessionTimeoutMs: 2_000, heartbeatIntervalMs: 500 });
    try {
      const topic = uniqueName('slow');
      await bus.ensureTopics([{ topic, partitions: 2 }]);
      await bus.publish(topic, [
        { key: 'k', value: 'slow' },
        { key: 'k', value: 'next' },
      ]);
      const consumer = await recordConsumer(bus, {
        groupId: uniqueName('group'),
        topic,
        // Without heartbeats from inside the handler the broker would evict the member after
        // 2 s; its commit would then fail and the slow message would be delivered again.
        during: (message) => (message.value === 'slow' ? sleep(5_000) : undefined),
      });

      await eventually(() => consumer.values(consumer.completed).has('next'), 'both messages');
      expect(consumer.received.map((message) => message.value)).toEqual(['slow', 'next']);
      expect(consumer.crashes).toEqual([]);
      await consumer.handle.stop();
    } finally {
      await bus.close();
    }
  }, 60_000);

  it.each([
    ['a clean shutdown', false],
    ['a kill -9', true],
  ])(
    'consumes every acknowledged message when the broker restarts after %s mid-stream',
    async (_how, hard) => {
      const logs: string[] = [];
      const bus = new KafkaBus({ brokers: broker.brokers, logger: quietLogger(logs), publishTimeoutMs: 60_000 });
      try {
        const topic = uniqueName('restart');
        await bus.ensureTopics([{ topic, partitions: 4 }]);
        const consumer = await recordConsumer(bus, { groupId: uniqueName('group'), topic, concurrency: 2 });

        const acked = new Set<string>();
        const failed: unknown[] = [];
        let restarted = false;
        let ackedAfterRestart = 0;
        let stopProducing = false;
        const producing = (async () => {
          for (let n = 0; !stopProducing && n < 5_000; n++) {
            const value = `r-${n}`;
            try {
              await bus.publish(topic, [{ key: `execution-${n % 10}`, value }]);
              acked.add(value);
              if (restarted) ackedAfterRestart++;
            } catch (error) {
              failed.push(error); // not acknowledged: the promise covers only acked messages
            }
            await sleep(5);
          }
        })();

        await eventually(() => acked.size >= 50 && consumer.completed.length >= 20, 'traffic before the restart');
        await broker.restart({ hard });
        restarted = true;
        await eventually(() => ackedAfterRestart >= 50, {
          what: () => `publishes acknowledged after the restart (${ackedAfterRestart}; failures: ${failed.map(String).join('; ')})`,
          timeoutMs: 60_000,
        });
        stopProducing = true;
        await producing;

        const missing = () => [...acked].filter((value) => !consumer.values(consumer.completed).has(value));
        await eventually(() => missing().length === 0, {
          what: () => `every acknowledged message consumed: ${missing().length} of ${acked.size} missing`,
          timeoutMs: 90_000,
        });
        expect(consumer.crashes).toEqual([]);
        await consumer.handle.stop();
      } finally {
        await bus.close();
      }
    },
    240_000,
  );
});

/** A loopback port nothing listens on. */
function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}
