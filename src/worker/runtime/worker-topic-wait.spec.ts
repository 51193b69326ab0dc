import { describe, expect, it } from '@jest/globals';
import { InProcessBus } from '../../bus/in-process/in-process-bus.js';
import { TOPICS } from '../../core/bus.port.js';
import { createLogger } from '../../core/logger.js';
import { eventually } from '../../../test/support/eventually.js';
import { DISPATCH_DLQ_TOPIC, WorkerService } from './worker.service.js';

/**
 * A worker process may start before any dispatcher has created the dispatch topic (separate
 * containers starting in any order). It must neither exit nor give up: it starts, says it is
 * waiting, and takes dispatches once the topic exists.
 */
describe('a worker started before the dispatch topic exists', () => {
  function aWorker(bus: InProcessBus, lines: string[]) {
    return new WorkerService({
      bus,
      apiUrl: 'http://127.0.0.1:9',
      token: 'unused',
      executeNode: () => Promise.reject(new Error('no node runs in this spec')),
      logger: createLogger({ level: 'info', write: (line) => void lines.push(line) }),
      concurrency: 1,
      nodeConcurrency: 1,
    });
  }

  it('starts, waits, and consumes once a dispatcher creates the topic', async () => {
    const bus = new InProcessBus();
    const lines: string[] = [];
    const worker = aWorker(bus, lines);
    await worker.start();
    expect(lines.some((line) => line.includes('the dispatch topic does not exist yet'))).toBe(true);

    // What a dispatcher does at its start; then an unreadable dispatch, which a consuming
    // worker dead-letters: the sign that it took it.
    await bus.ensureTopics([
      { topic: TOPICS.dispatch, partitions: 2 },
      { topic: DISPATCH_DLQ_TOPIC, partitions: 1 },
    ]);
    await bus.publish(TOPICS.dispatch, [{ key: 'e-1', value: 'not json' }]);
    await eventually(async () => [...(await bus.endOffsets(DISPATCH_DLQ_TOPIC)).values()].some((end) => end > 0n), 'the dead letter');
    expect(lines.some((line) => line.includes('the dispatch topic exists now'))).toBe(true);

    await worker.stop();
    await bus.close();
  });
});
