import { describe, expect, it } from '@jest/globals';
import type { Sleep } from './dag.types.js';
import { NODE_TIMEOUT } from './node-retry.js';
import { deferred, flushEventLoop } from '../../../test/support/worker/dag/deferred.js';
import { eventTrace, graphOf, ScriptedNodes } from '../../../test/support/worker/dag/scripted-nodes.js';
import { startRun } from '../../../test/support/worker/dag/start-run.js';

/** Timers on a clock the test moves: `sleep` resolves once `advance` passes its end. */
class ManualClock {
  private now = 0;
  private readonly timers = new Set<{ readonly at: number; readonly fire: () => void }>();

  readonly sleep: Sleep = (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      const timer = {
        at: this.now + ms,
        fire: () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        this.timers.delete(timer);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.timers.add(timer);
    });

  get pending(): number {
    return this.timers.size;
  }

  async advance(ms: number): Promise<void> {
    this.now += ms;
    for (const timer of [...this.timers].sort((a, b) => a.at - b.at)) {
      if (timer.at > this.now) continue;
      this.timers.delete(timer);
      timer.fire();
    }
    await flushEventLoop();
  }
}

const TIMEOUT_FAILURE = { code: NODE_TIMEOUT, message: 'node A did not finish within its timeoutMs of 500 ms' };

describe('runDag: node timeouts', () => {
  it('given a node still running at its timeoutMs, then its signal aborts and it fails node_timeout', async () => {
    const clock = new ManualClock();
    const nodes = new ScriptedNodes();
    nodes.hold('A');
    const { result, events } = startRun({
      graph: graphOf([{ id: 'A', type: 'noop', timeoutMs: 500 }, 'B'], 'A>B'),
      executeNode: nodes.execute,
      sleep: clock.sleep,
    });
    const ctx = await nodes.started('A');

    await clock.advance(499);
    expect(ctx.signal.aborted).toBe(false);
    await clock.advance(1);

    const outcome = await result;
    expect(ctx.signal.aborted).toBe(true);
    expect(ctx.signal.reason).toMatchObject({ code: NODE_TIMEOUT });
    expect(outcome).toMatchObject({ outcome: 'failed', failedNodeId: 'A', error: TIMEOUT_FAILURE });
    expect(outcome.nodes['B']).toMatchObject({ status: 'skipped' });
    expect(eventTrace(events)).toEqual(['started:A', 'failed:A', 'skipped:B']);
  });

  it('given a node that finishes before its timeoutMs, then it succeeds and leaves no timer behind', async () => {
    const clock = new ManualClock();
    const nodes = new ScriptedNodes();
    const gate = nodes.hold('A');
    const { result } = startRun({
      graph: graphOf([{ id: 'A', type: 'noop', timeoutMs: 500 }]),
      executeNode: nodes.execute,
      sleep: clock.sleep,
    });
    await nodes.started('A');
    await clock.advance(100);
    gate.resolve({ done: true });

    expect(await result).toMatchObject({ outcome: 'succeeded', output: { A: { done: true } } });
    expect(clock.pending).toBe(0);
  });

  it('given a node that ignores its signal, then it still fails at the deadline and its late output is dropped', async () => {
    const clock = new ManualClock();
    const nodes = new ScriptedNodes();
    const late = deferred<unknown>();
    nodes.script('A', () => late.promise);
    const { result, events } = startRun({
      graph: graphOf([{ id: 'A', type: 'noop', timeoutMs: 500 }]),
      executeNode: nodes.execute,
      sleep: clock.sleep,
    });
    await nodes.started('A');
    await clock.advance(500);

    expect(await result).toMatchObject({ outcome: 'failed', error: TIMEOUT_FAILURE });
    late.resolve({ tooLate: true });
    await flushEventLoop();
    expect(eventTrace(events)).toEqual(['started:A', 'failed:A']);
  });

  it('given a retry policy, then node_timeout is retried like any retryable failure, each try with its own deadline', async () => {
    const clock = new ManualClock();
    const nodes = new ScriptedNodes();
    let tries = 0;
    const gates = [deferred<unknown>(), deferred<unknown>()];
    nodes.script('A', (ctx) => {
      const gate = gates[tries++];
      ctx.signal.addEventListener('abort', () => gate.reject(ctx.signal.reason), { once: true });
      return gate.promise;
    });
    const { result } = startRun({
      graph: graphOf([{ id: 'A', type: 'noop', timeoutMs: 500, retry: { maxAttempts: 2, initialIntervalMs: 0 } }]),
      executeNode: nodes.execute,
      sleep: clock.sleep,
    });
    await nodes.started('A');
    await clock.advance(500);
    await clock.advance(0); // the backoff before the second try
    // Its deadline is its own: 500 ms from its start.
    expect(nodes.callsOf('A')).toHaveLength(2);
    await clock.advance(400);
    gates[1].resolve('second try');

    expect(await result).toMatchObject({ outcome: 'succeeded', output: { A: 'second try' } });
    expect((await result).nodes['A']).toMatchObject({ status: 'succeeded', tries: 2 });
  });

  it('given node_timeout listed nonRetryable, then a timed-out try is the last', async () => {
    const clock = new ManualClock();
    const nodes = new ScriptedNodes();
    nodes.hold('A');
    const { result } = startRun({
      graph: graphOf([{ id: 'A', type: 'noop', timeoutMs: 500, retry: { maxAttempts: 5, nonRetryable: [NODE_TIMEOUT] } }]),
      executeNode: nodes.execute,
      sleep: clock.sleep,
    });
    await nodes.started('A');
    await clock.advance(500);

    expect(await result).toMatchObject({ outcome: 'failed', error: TIMEOUT_FAILURE });
    expect(nodes.callsOf('A')).toHaveLength(1);
  });

  it('given the run is cancelled before the deadline, then the node is cancelled, not timed out', async () => {
    const clock = new ManualClock();
    const nodes = new ScriptedNodes();
    nodes.hold('A');
    const { result, controller } = startRun({
      graph: graphOf([{ id: 'A', type: 'noop', timeoutMs: 500 }]),
      executeNode: nodes.execute,
      sleep: clock.sleep,
    });
    await nodes.started('A');
    controller.abort(new Error('cancel requested'));

    const outcome = await result;
    expect(outcome).toMatchObject({ outcome: 'cancelled' });
    expect(outcome.nodes['A']).toMatchObject({ status: 'cancelled' });
    expect(clock.pending).toBe(0);
  });
});
