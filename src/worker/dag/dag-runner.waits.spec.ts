import { describe, expect, it } from '@jest/globals';
import { DagReportError } from './dag-runner.js';
import { NodeError } from './node-error.js';
import { eventTrace, graphOf, recordingReport, ScriptedNodes } from '../../../test/support/worker/dag/scripted-nodes.js';
import { startRun } from '../../../test/support/worker/dag/start-run.js';

const task = (id: string) => ({ id, type: 'task' as const, config: { queue: 'q' } });

describe('runDag: task nodes and waits that failed earlier in the try', () => {
  describe('node_waiting', () => {
    it('asks for the task with what the node computed as its input, starts nothing behind it and suspends', async () => {
      const nodes = new ScriptedNodes();
      nodes.script('T', async (ctx) => ({ amount: (ctx.input.nodes['A'] as { by: string }).by }));
      const { result, events } = startRun({ graph: graphOf(['A', task('T'), 'B'], 'A>T', 'T>B'), executeNode: nodes.execute });

      const outcome = await result;

      expect(events).toEqual([
        { kind: 'node_started', nodeId: 'A' },
        { kind: 'node_succeeded', nodeId: 'A', output: { by: 'A' } },
        { kind: 'node_waiting', nodeId: 'T', wait: { kind: 'task', input: { amount: 'A' } } },
      ]);
      expect(outcome).toMatchObject({ outcome: 'suspended', approvals: [], tasks: ['T'] });
      expect(outcome.nodes['T']).toEqual({ status: 'waiting' });
      expect(outcome.nodes['B']).toEqual({ status: 'pending' });
      expect(nodes.callsOf('B')).toHaveLength(0);
    });

    it('runs the other branches and lists every task asked for, in the order reached', async () => {
      const nodes = new ScriptedNodes();
      const { result, events } = startRun({
        graph: graphOf([task('T1'), 'X', task('T2'), 'Y'], 'X>T2', 'X>Y'),
        executeNode: nodes.execute,
        concurrency: 1,
      });

      expect(await result).toMatchObject({ outcome: 'suspended', tasks: ['T1', 'T2'] });
      expect(eventTrace(events)).toEqual(['waiting:T1', 'started:X', 'succeeded:X', 'waiting:T2', 'started:Y', 'succeeded:Y']);
    });

    it('never reports the task node as started or succeeded: its result comes from the task', async () => {
      const nodes = new ScriptedNodes();
      const held: string[] = [];
      const { result, events } = startRun({
        graph: graphOf([task('T')]),
        executeNode: nodes.execute,
        isPure: () => true,
        hold: (event) => held.push(`${event.kind}:${event.nodeId}`),
      });

      await result;
      expect(eventTrace(events)).toEqual(['waiting:T']);
      expect(held).toEqual([]);
    });

    it('stops with DagReportError when the request for the task is not acknowledged', async () => {
      const nodes = new ScriptedNodes();
      const { report } = recordingReport((event) => event.kind === 'node_waiting');

      await expect(startRun({ graph: graphOf([task('T'), 'B'], 'T>B'), executeNode: nodes.execute, report }).result).rejects.toThrow(
        DagReportError,
      );
    });

    it('fails the node when its input cannot be computed, without asking for a task', async () => {
      const nodes = new ScriptedNodes();
      nodes.script('T', async () => {
        throw new NodeError('transform_failed', 'bad expression', false);
      });
      const { result, events } = startRun({ graph: graphOf([task('T')]), executeNode: nodes.execute });

      expect(await result).toMatchObject({ outcome: 'failed', failedNodeId: 'T', error: { code: 'transform_failed' } });
      expect(eventTrace(events)).toEqual(['failed:T']);
    });

    it('goes on behind the task once its output is passed as a completed node', async () => {
      const nodes = new ScriptedNodes();
      const { result, events } = startRun({
        graph: graphOf(['A', task('T'), 'B'], 'A>T', 'T>B'),
        completedNodes: { A: { by: 'A' }, T: { charged: 5 } },
        executeNode: nodes.execute,
      });

      expect(await result).toMatchObject({ outcome: 'succeeded', output: { B: { by: 'B' } } });
      expect(nodes.callsOf('B')[0].input.nodes).toEqual({ T: { charged: 5 } });
      expect(eventTrace(events)).toEqual(['started:B', 'succeeded:B']);
    });
  });

  describe('failedNodes', () => {
    const error = { code: 'card_declined', message: 'declined', retryable: false };

    it('counts a wait that failed earlier in the try as failed: not run, not reported, and the run fails with its error', async () => {
      const nodes = new ScriptedNodes();
      const { result, events } = startRun({
        graph: graphOf(['A', task('T'), 'B', 'X'], 'A>T', 'T>B', 'A>X'),
        completedNodes: { A: { by: 'A' } },
        failedNodes: { T: error },
        executeNode: nodes.execute,
      });

      const outcome = await result;

      expect(outcome).toMatchObject({ outcome: 'failed', failedNodeId: 'T', error });
      expect(outcome.nodes['T']).toEqual({ status: 'failed', error, tries: 0 });
      expect(nodes.calls.map((ctx) => ctx.nodeId)).toEqual(['X']);
      expect(eventTrace(events)).toEqual(['skipped:B', 'started:X', 'succeeded:X']);
    });

    it('lets trigger rules see it as failed: an all_done successor runs, a one_success one runs on another success', async () => {
      const nodes = new ScriptedNodes();
      const { result } = startRun({
        graph: graphOf(
          [task('T'), 'S', { id: 'D', type: 'noop', trigger: 'all_done' }, { id: 'O', type: 'noop', trigger: 'one_success' }],
          'T>D',
          'T>O',
          'S>O',
        ),
        failedNodes: { T: error },
        executeNode: nodes.execute,
      });

      const outcome = await result;
      expect(outcome.outcome).toBe('failed');
      expect(nodes.calls.map((ctx) => ctx.nodeId).sort()).toEqual(['D', 'O', 'S']);
    });

    it('keeps the wait’s error when a node of this attempt fails too (the first failed node in graph order)', async () => {
      const nodes = new ScriptedNodes();
      nodes.script('X', async () => {
        throw new NodeError('boom', 'X broke', false);
      });
      const { result } = startRun({ graph: graphOf([task('T'), 'X']), failedNodes: { T: error }, executeNode: nodes.execute });

      expect(await result).toMatchObject({ outcome: 'failed', failedNodeId: 'T', error });
    });

    it('fails rather than suspends when other tasks are still asked for', async () => {
      const nodes = new ScriptedNodes();
      const { result, events } = startRun({
        graph: graphOf([task('T'), task('U')]),
        failedNodes: { T: error },
        executeNode: nodes.execute,
      });

      expect(await result).toMatchObject({ outcome: 'failed', failedNodeId: 'T' });
      expect(eventTrace(events)).toEqual(['waiting:U']);
    });
  });
});
