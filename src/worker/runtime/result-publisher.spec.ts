import { describe, expect, it, jest } from '@jest/globals';
import type { Bus, OutgoingMessage } from '../../core/bus.port.js';
import { deferred, flushEventLoop, type Deferred } from '../../../test/support/worker/dag/deferred.js';
import { ResultPublisher, ResultTooLargeError } from './result-publisher.js';
import { busResultSink } from './result-sink.js';

interface PublishCall {
  topic: string;
  messages: { kind: string; nodeId?: string; sequence: number }[];
  ack: Deferred<void>;
}

/** A bus whose publish calls the test sees one by one and acknowledges (or fails) by hand. */
function scriptedBus() {
  const calls: PublishCall[] = [];
  let arrived: Deferred<void> = deferred();
  const bus: Bus = {
    durable: true,
    publish(topic: string, messages: OutgoingMessage[]) {
      const ack = deferred();
      calls.push({ topic, messages: messages.map((m) => JSON.parse(m.value)), ack });
      arrived.resolve();
      arrived = deferred();
      return ack.promise;
    },
    consume: () => Promise.reject(new Error('not used')),
    endOffsets: () => Promise.reject(new Error('not used')),
    committedOffsets: () => Promise.reject(new Error('not used')),
    ensureTopics: async () => {},
    close: async () => {},
  };
  /** The publish call number `n` (from 0), once it was made. */
  const call = async (n: number): Promise<PublishCall> => {
    while (calls.length <= n) await arrived.promise;
    return calls[n];
  };
  const kinds = (call: PublishCall) => call.messages.map((m) => (m.nodeId === undefined ? m.kind : `${m.kind}:${m.nodeId}`));
  return { bus, calls, call, kinds };
}

const FENCE = { executionId: 'e-1', attemptId: 'a-1', workerId: 'w-1', fencingToken: 3 };

describe('ResultPublisher', () => {
  it('refuses a result too large for one message before sending anything, keeping what is held and its sequence', async () => {
    const { bus, calls, kinds } = scriptedBus();
    const publisher = new ResultPublisher(busResultSink(bus), FENCE, { holdMs: 60_000, maxMessageBytes: 1_000 });

    publisher.hold({ kind: 'node_succeeded', nodeId: 'A', output: 1 });
    const refused = await publisher.publish({ kind: 'attempt_succeeded', output: { big: 'x'.repeat(1_000) } }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ResultTooLargeError);
    expect(refused).toMatchObject({ result: 'attempt_succeeded', limitBytes: 1_000 });
    expect((refused as ResultTooLargeError).bytes).toBeGreaterThan(1_000);
    expect(calls).toHaveLength(0);

    const failed = publisher.publish({ kind: 'attempt_failed', error: { code: 'output_too_large', message: 'too large' } });
    await flushEventLoop();
    expect(calls.map(kinds)).toEqual([['node_succeeded:A', 'attempt_failed']]);
    expect(calls[0].messages.map((m) => m.sequence)).toEqual([0, 1]);
    calls[0].ack.resolve();
    await failed;
  });

  it('sends held results in the same publish call as the next result, ahead of it and in order', async () => {
    const { bus, calls, kinds } = scriptedBus();
    const publisher = new ResultPublisher(busResultSink(bus), FENCE, { holdMs: 60_000 });

    publisher.hold({ kind: 'node_started', nodeId: 'A' });
    publisher.hold({ kind: 'node_succeeded', nodeId: 'A', output: 1 });
    await flushEventLoop();
    expect(calls).toHaveLength(0);

    const done = publisher.publish({ kind: 'attempt_succeeded', output: {} });
    await flushEventLoop();
    expect(calls.map(kinds)).toEqual([['node_started:A', 'node_succeeded:A', 'attempt_succeeded']]);
    expect(calls[0].topic).toBe('flostra.results.v1');
    expect(calls[0].messages.map((m) => m.sequence)).toEqual([0, 1, 2]);
    calls[0].ack.resolve();
    await done;
  });

  it('sends held results alone when no result follows within holdMs', async () => {
    const { bus, call, kinds } = scriptedBus();
    const publisher = new ResultPublisher(busResultSink(bus), FENCE, { holdMs: 1 });

    publisher.hold({ kind: 'node_skipped', nodeId: 'C', reason: 'upstream failed' });
    const alone = await call(0);
    expect(kinds(alone)).toEqual(['node_skipped:C']);
  });

  it('publishes the next result only after held results that went out alone were acknowledged', async () => {
    const { bus, calls, call, kinds } = scriptedBus();
    const publisher = new ResultPublisher(busResultSink(bus), FENCE, { holdMs: 1 });

    publisher.hold({ kind: 'node_succeeded', nodeId: 'A', output: 1 });
    const flush = await call(0);
    const started = publisher.publish({ kind: 'node_started', nodeId: 'X' });
    await flushEventLoop();
    expect(calls).toHaveLength(1);

    flush.ack.resolve();
    expect(kinds(await call(1))).toEqual(['node_started:X']);
    calls[1].ack.resolve();
    await started;
  });

  it('rejects the next result, once, with the failure of held results that went out alone, and drops what was held after them', async () => {
    const { bus, calls, call, kinds } = scriptedBus();
    const publisher = new ResultPublisher(busResultSink(bus), FENCE, { holdMs: 60_000, maxHeldBytes: 1_000 });

    publisher.hold({ kind: 'node_succeeded', nodeId: 'A', output: 'a'.repeat(900) });
    publisher.hold({ kind: 'node_started', nodeId: 'B' }); // past maxHeldBytes: A goes out alone
    const lost = await call(0);
    expect(kinds(lost)).toEqual(['node_succeeded:A']);
    lost.ack.reject(new Error('message too large'));

    await expect(publisher.publish({ kind: 'attempt_succeeded' })).rejects.toThrow('message too large');
    expect(calls).toHaveLength(1);

    // The attempt then reports its failure: that one goes out, without B's start held behind A.
    const failed = publisher.publish({ kind: 'attempt_failed', error: { code: 'result_publish_failed', message: 'message too large' } });
    expect(kinds(await call(1))).toEqual(['attempt_failed']);
    calls[1].ack.resolve();
    await failed;
  });

  it('sends held results first, on their own, rather than make one batch larger than maxHeldBytes', async () => {
    const { bus, calls, call, kinds } = scriptedBus();
    const publisher = new ResultPublisher(busResultSink(bus), FENCE, { holdMs: 60_000, maxHeldBytes: 1_000 });

    publisher.hold({ kind: 'node_succeeded', nodeId: 'A', output: 'a'.repeat(600) });
    const done = publisher.publish({ kind: 'attempt_succeeded', output: 'd'.repeat(600) });
    const first = await call(0);
    expect(kinds(first)).toEqual(['node_succeeded:A']);
    await flushEventLoop();
    expect(calls).toHaveLength(1);

    first.ack.resolve();
    const second = await call(1);
    expect(kinds(second)).toEqual(['attempt_succeeded']);
    second.ack.resolve();
    await done;
  });

  it('sends nothing of what it held once discarded', async () => {
    const { bus, calls } = scriptedBus();
    const publisher = new ResultPublisher(busResultSink(bus), FENCE, { holdMs: 1 });

    jest.useFakeTimers();
    try {
      publisher.hold({ kind: 'node_succeeded', nodeId: 'A', output: 1 });
      publisher.discard();
      jest.advanceTimersByTime(60_000); // far past holdMs: a timer left behind would have fired
    } finally {
      jest.useRealTimers();
    }
    await flushEventLoop();
    expect(calls).toHaveLength(0);
  });
});
