import { describe, expect, it } from '@jest/globals';
import { type Bus, type IncomingMessage, type OutgoingMessage, TOPICS } from '../core/bus.port.js';
import { systemClock } from '../core/clock.port.js';
import { randomIds } from '../core/ids.js';
import { createLogger } from '../core/logger.js';
import { ResultIngestor } from '../ingest/application/result-ingestor.js';
import { ResultPublisher } from '../worker/runtime/result-publisher.js';
import { deferred, flushEventLoop, type Deferred } from '../../test/support/worker/dag/deferred.js';
import { IN_PROCESS_ORIGIN, InProcessResultSink } from './in-process-result-sink.js';

/** An ingestor whose batches the test sees one by one and finishes (or fails) by hand. */
function scriptedIngestor() {
  const batches: { messages: IncomingMessage[]; done: Deferred<void> }[] = [];
  const ingestor = {
    handleBatch(messages: IncomingMessage[]) {
      const done = deferred();
      batches.push({ messages, done });
      return done.promise;
    },
  };
  const values = (n: number) => batches[n].messages.map((m) => m.value);
  return { ingestor, batches, values };
}

const message = (key: string, value: string, headers?: Record<string, string>): OutgoingMessage => ({ key, value, headers });

/** Whether `promise` has settled, and how, after the event loop ran. */
async function state(promise: Promise<unknown>): Promise<'pending' | 'resolved' | 'rejected'> {
  let settled: 'pending' | 'resolved' | 'rejected' = 'pending';
  promise.then(
    () => (settled = 'resolved'),
    () => (settled = 'rejected'),
  );
  await flushEventLoop();
  return settled;
}

describe('InProcessResultSink', () => {
  it('resolves a send only once the ingestor handled it, and hands the messages over as they were sent', async () => {
    const { ingestor, batches } = scriptedIngestor();
    const sink = new InProcessResultSink(ingestor);
    const sent = sink.send([message('e-1', '{"a":1}', { traceparent: 't' }), message('e-1', '{"b":2}')]);
    expect(await state(sent)).toBe('pending');
    expect(batches).toHaveLength(1);
    expect(batches[0].messages).toEqual([
      { ...IN_PROCESS_ORIGIN, key: 'e-1', value: '{"a":1}', headers: { traceparent: 't' } },
      { ...IN_PROCESS_ORIGIN, key: 'e-1', value: '{"b":2}', headers: {} },
    ]);
    batches[0].done.resolve();
    expect(await state(sent)).toBe('resolved');
    expect(sink.handledOnSend).toBe(true);
  });

  it('handles the sends of one execution one after another, in order, those that queued meanwhile together', async () => {
    const { ingestor, batches, values } = scriptedIngestor();
    const sink = new InProcessResultSink(ingestor);
    const first = sink.send([message('e-1', '1')]);
    const second = sink.send([message('e-1', '2')]);
    const third = sink.send([message('e-1', '3'), message('e-1', '4')]);
    await flushEventLoop();
    expect(batches).toHaveLength(1);
    batches[0].done.resolve();
    expect(await state(first)).toBe('resolved');
    expect(await state(second)).toBe('pending');
    expect(batches).toHaveLength(2);
    expect(values(1)).toEqual(['2', '3', '4']);
    batches[1].done.resolve();
    expect([await state(second), await state(third)]).toEqual(['resolved', 'resolved']);
    // The lane is free again: the next send goes at once, alone.
    void sink.send([message('e-1', '5')]);
    await flushEventLoop();
    expect(values(2)).toEqual(['5']);
  });

  it('handles the sends of different executions side by side', async () => {
    const { ingestor, batches, values } = scriptedIngestor();
    const sink = new InProcessResultSink(ingestor);
    void sink.send([message('e-1', '1')]);
    const other = sink.send([message('e-2', '2')]);
    await flushEventLoop();
    expect(batches.map((_, n) => values(n))).toEqual([['1'], ['2']]);
    batches[1].done.resolve();
    expect(await state(other)).toBe('resolved');
  });

  it('rejects the sends the ingestor failed (the store down beyond its retries), and goes on with the next', async () => {
    const { ingestor, batches } = scriptedIngestor();
    const sink = new InProcessResultSink(ingestor);
    const failed = sink.send([message('e-1', '1')]);
    const alsoFailed = sink.send([message('e-1', '2')]);
    await flushEventLoop();
    batches[0].done.reject(new Error('store down'));
    await expect(failed).rejects.toThrow('store down');
    await flushEventLoop();
    batches[1].done.reject(new Error('still down'));
    await expect(alsoFailed).rejects.toThrow('still down');
    const later = sink.send([message('e-1', '3')]);
    await flushEventLoop();
    batches[2].done.resolve();
    expect(await state(later)).toBe('resolved');
  });

  it("makes a publisher's publish reject when the ingestor fails, so the attempt fails visibly (promise 6)", async () => {
    const { ingestor, batches } = scriptedIngestor();
    const publisher = new ResultPublisher(new InProcessResultSink(ingestor), {
      executionId: 'e-1',
      attemptId: 'a-1',
      workerId: 'w-1',
      fencingToken: 1,
    });
    const published = publisher.publish({ kind: 'attempt_succeeded', output: {} });
    await flushEventLoop();
    batches[0].done.reject(new Error('store down'));
    await expect(published).rejects.toThrow('store down');
  });

  it('dead-letters a bad result with the reason, naming where it came from, and resolves the send', async () => {
    const letters: { topic: string; messages: OutgoingMessage[] }[] = [];
    const bus = { publish: async (topic: string, messages: OutgoingMessage[]) => void letters.push({ topic, messages }) } as Bus;
    const executions = { handleBatch: () => Promise.reject(new Error('not reached: nothing valid to record')) };
    const logger = createLogger({ level: 'silent' });
    const sink = new InProcessResultSink(new ResultIngestor({ executions, bus, clock: systemClock, ids: randomIds, logger }));
    await sink.send([message('e-1', 'not json')]);
    expect(letters).toHaveLength(1);
    expect(letters[0].topic).toBe(TOPICS.resultsDlq);
    expect(JSON.parse(letters[0].messages[0].value)).toMatchObject({
      reason: { code: expect.any(String) },
      original: 'not json',
      topic: 'in-process',
      partition: -1,
      offset: '-1',
    });
  });
});
