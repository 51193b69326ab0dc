import { describe, expect, it } from '@jest/globals';
import { performance } from 'node:perf_hooks';
import type { ExecuteNode, Sleep } from './dag.types.js';
import { DagReportError } from './dag-runner.js';
import { NodeError } from './node-error.js';
import { abortableSleep } from './node-retry.js';
import { deferred, flushEventLoop } from '../../../test/support/worker/dag/deferred.js';
import { eventTrace, graphOf, recordingReport, ScriptedNodes } from '../../../test/support/worker/dag/scripted-nodes.js';
import { startRun } from '../../../test/support/worker/dag/start-run.js';

const retry = (policy: Record<string, unknown>) => ({ initialIntervalMs: 100, backoffCoefficient: 2, maxIntervalMs: 1_000, ...policy });

function failTimes(times: number, error: () => Error) {
  let calls = 0;
  return async () => {
    calls++;
    if (calls <= times) throw error();
    return { afterFailures: times };
  };
}

describe('runDag: node retries', () => {
  it('retries with exponential backoff and jitter, reporting only the final outcome', async () => {
    const nodes = new ScriptedNodes();
    nodes.script(
      'A',
      failTimes(2, () => new NodeError('flaky', 'try again', true)),
    );
    const sleeps: number[] = [];
    const { result, events } = startRun({
      graph: graphOf([{ id: 'A', type: 'noop', retry: retry({ maxAttempts: 3 }) }]),
      executeNode: nodes.execute,
      sleep: async (ms) => void sleeps.push(ms),
    });

    const outcome = await result;

    // 100 then 200 ms, each with "equal jitter" at 0.5: half fixed plus a quarter.
    expect(sleeps).toEqual([75, 150]);
    expect(eventTrace(events)).toEqual(['started:A', 'succeeded:A']);
    expect(outcome.nodes['A']).toMatchObject({ status: 'succeeded', tries: 3 });
    expect(nodes.callsOf('A').map((ctx) => [ctx.tryNumber, ctx.idempotencyKey])).toEqual([
      [1, 'exec-1:A'],
      [2, 'exec-1:A'],
      [3, 'exec-1:A'],
    ]);
  });

  it('reports one node_failed after the last try', async () => {
    const nodes = new ScriptedNodes();
    nodes.script(
      'A',
      failTimes(9, () => new NodeError('flaky', 'still down', true)),
    );
    const { result, events } = startRun({
      graph: graphOf([{ id: 'A', type: 'noop', retry: retry({ maxAttempts: 3 }) }]),
      executeNode: nodes.execute,
    });

    expect(await result).toMatchObject({ outcome: 'failed', error: { code: 'flaky' } });
    expect(nodes.callsOf('A')).toHaveLength(3);
    expect(eventTrace(events)).toEqual(['started:A', 'failed:A']);
  });

  it.each([
    ['a nonRetryable code', new NodeError('bad_input', 'no', undefined)],
    ['an error marked retryable: false', new NodeError('flaky', 'no', false)],
  ])('does not retry %s', async (_what, error) => {
    const nodes = new ScriptedNodes();
    nodes.script(
      'A',
      failTimes(9, () => error),
    );
    const { result } = startRun({
      graph: graphOf([{ id: 'A', type: 'noop', retry: retry({ maxAttempts: 5, nonRetryable: ['bad_input'] }) }]),
      executeNode: nodes.execute,
    });

    expect((await result).outcome).toBe('failed');
    expect(nodes.callsOf('A')).toHaveLength(1);
  });
});

describe('runDag: a failing report (promise 6)', () => {
  it('fails the run visibly, starts nothing more, and awaits the aborted nodes first', async () => {
    const nodes = new ScriptedNodes();
    nodes.hold('C');
    const { events, report } = recordingReport((event) => event.kind === 'node_succeeded' && event.nodeId === 'A');
    const { result } = startRun({ graph: graphOf(['A', 'B', 'C'], 'A>B'), executeNode: nodes.execute, report });

    const error = await result.catch((e: unknown) => e);

    expect(error).toBeInstanceOf(DagReportError);
    expect((error as DagReportError).event).toEqual({ kind: 'node_succeeded', nodeId: 'A', output: { by: 'A' } });
    expect(nodes.callsOf('B')).toHaveLength(0);
    expect(nodes.settledAfterAbort).toEqual(['C']);
    expect(nodes.running).toBe(0);
    expect(eventTrace(events)).toEqual(['started:A', 'started:C']);
  });

  it('never executes a node whose node_started could not be reported', async () => {
    const nodes = new ScriptedNodes();
    const { report } = recordingReport((event) => event.kind === 'node_started');

    await expect(startRun({ graph: graphOf(['A']), executeNode: nodes.execute, report }).result).rejects.toBeInstanceOf(DagReportError);
    expect(nodes.calls).toHaveLength(0);
  });

  it('fails the run when a skip cannot be reported', async () => {
    const nodes = new ScriptedNodes();
    nodes.script('A', async () => {
      throw new NodeError('boom', 'A broke', false);
    });
    const { report } = recordingReport((event) => event.kind === 'node_skipped');

    await expect(startRun({ graph: graphOf(['A', 'B'], 'A>B'), executeNode: nodes.execute, report }).result).rejects.toThrow(
      'reporting node_skipped of node B failed',
    );
  });
});

describe('runDag: cancellation (promise 7)', () => {
  it('aborts a long-running node promptly and starts nothing new', async () => {
    const started = deferred();
    // A node that runs until its signal aborts (as an http call or a code run does).
    const executeNode: ExecuteNode = (_node, ctx) => {
      started.resolve();
      return new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true }));
    };
    const graph = graphOf(['WAIT', 'NEXT'], 'WAIT>NEXT');
    const { result, events, controller } = startRun({ graph, executeNode });

    await started.promise;
    const abortedAt = performance.now();
    controller.abort(new Error('cancel requested'));
    const outcome = await result;

    expect(performance.now() - abortedAt).toBeLessThan(1_000);
    expect(outcome.outcome).toBe('cancelled');
    expect(outcome.nodes).toEqual({ WAIT: { status: 'cancelled', tries: 1 }, NEXT: { status: 'pending' } });
    expect(eventTrace(events)).toEqual(['started:WAIT']);
  });

  it('interrupts a retry backoff', async () => {
    const backingOff = deferred();
    const sleep: Sleep = (ms, signal) => {
      backingOff.resolve();
      return abortableSleep(ms, signal);
    };
    const nodes = new ScriptedNodes();
    nodes.script(
      'A',
      failTimes(9, () => new NodeError('flaky', 'down', true)),
    );
    const graph = graphOf([
      { id: 'A', type: 'noop', retry: retry({ maxAttempts: 5, initialIntervalMs: 3_600_000, maxIntervalMs: 3_600_000 }) },
    ]);
    const { result, events, controller } = startRun({ graph, executeNode: nodes.execute, sleep });

    await backingOff.promise;
    controller.abort();

    expect(await result).toMatchObject({ outcome: 'cancelled', nodes: { A: { status: 'cancelled', tries: 1 } } });
    expect(eventTrace(events)).toEqual(['started:A']);
  });

  it('leaves queued nodes unstarted', async () => {
    const nodes = new ScriptedNodes();
    nodes.hold('A');
    const { result, controller } = startRun({ graph: graphOf(['A', 'B', 'C']), executeNode: nodes.execute, concurrency: 1 });

    await nodes.started('A');
    await flushEventLoop();
    controller.abort();

    expect(await result).toMatchObject({ outcome: 'cancelled', nodes: { B: { status: 'pending' }, C: { status: 'pending' } } });
    expect(nodes.calls.map((ctx) => ctx.nodeId)).toEqual(['A']);
  });

  it('starts nothing when the signal is already aborted', async () => {
    const nodes = new ScriptedNodes();
    const controller = new AbortController();
    controller.abort();
    const { result, events } = startRun({ graph: graphOf(['A']), executeNode: nodes.execute, signal: controller.signal });

    expect((await result).outcome).toBe('cancelled');
    expect(nodes.calls).toHaveLength(0);
    expect(events).toHaveLength(0);
  });
});
