import { describe, expect, it } from '@jest/globals';
import { approvalActionDigest } from './approval.js';
import { NodeError } from './node-error.js';
import { eventTrace, graphOf, ScriptedNodes } from '../../../test/support/worker/dag/scripted-nodes.js';
import { startRun } from '../../../test/support/worker/dag/start-run.js';

describe('runDag: durable resume', () => {
  describe('when nodes succeeded in an earlier attempt', () => {
    it('reuses their outputs without running or reporting them', async () => {
      const nodes = new ScriptedNodes();
      const { result, events } = startRun({
        graph: graphOf(['A', 'B', 'C'], 'A>B', 'B>C'),
        completedNodes: { A: { x: 1 }, B: { y: 2 } },
        executeNode: nodes.execute,
      });

      const outcome = await result;

      expect(nodes.calls.map((ctx) => ctx.nodeId)).toEqual(['C']);
      expect(eventTrace(events)).toEqual(['started:C', 'succeeded:C']);
      expect(nodes.callsOf('C')[0].input.nodes).toEqual({ B: { y: 2 } });
      expect(outcome.nodes['B']).toEqual({ status: 'succeeded', output: { y: 2 }, reused: true, tries: 0 });
    });

    it('ends at once when every node is completed, with the reused leaf outputs', async () => {
      const nodes = new ScriptedNodes();
      const { result, events } = startRun({
        graph: graphOf(['A', 'B'], 'A>B'),
        completedNodes: { A: 1, B: null, Z: 'not in the graph' },
        executeNode: nodes.execute,
      });

      expect(await result).toMatchObject({ outcome: 'succeeded', output: { B: null } });
      expect(nodes.calls).toHaveLength(0);
      expect(events).toHaveLength(0);
    });
  });

  describe('when an approval node becomes runnable', () => {
    const graph = graphOf(['A', { id: 'P', type: 'approval', config: { action: { pay: 5 } } }, 'C', 'X'], 'A>P', 'P>C', 'A>X');

    it('suspends there: the approval is not executed, nodes behind it wait, other branches run', async () => {
      const nodes = new ScriptedNodes();
      const { result, events } = startRun({ graph, executeNode: nodes.execute });

      const outcome = await result;

      expect(outcome).toMatchObject({
        outcome: 'suspended',
        approvals: [
          {
            nodeId: 'P',
            action: { pay: 5 },
            inputs: { A: { by: 'A' } },
            actionDigest: approvalActionDigest({ executionId: 'exec-1', nodeId: 'P', action: { pay: 5 }, inputs: { A: { by: 'A' } } }),
          },
        ],
      });
      expect(nodes.calls.map((ctx) => ctx.nodeId).sort()).toEqual(['A', 'X']);
      expect(eventTrace(events)).not.toContain('started:P');
      expect(outcome.nodes['P'].status).toBe('awaiting_approval');
      expect(outcome.nodes['C']).toEqual({ status: 'pending' });
    });

    it('binds the digest to the inputs: other upstream outputs give another digest', () => {
      const base = { executionId: 'exec-1', nodeId: 'P', action: { pay: 5 } };
      expect(approvalActionDigest({ ...base, inputs: { A: 1 } })).not.toBe(approvalActionDigest({ ...base, inputs: { A: 2 } }));
    });

    it('continues behind the approval once its decision is passed as a completed output', async () => {
      const nodes = new ScriptedNodes();
      const { result } = startRun({
        graph,
        completedNodes: { A: { by: 'A' }, X: { by: 'X' }, P: { decision: 'approve' } },
        executeNode: nodes.execute,
      });

      expect(await result).toMatchObject({ outcome: 'succeeded' });
      expect(nodes.callsOf('C')[0].input.nodes).toEqual({ P: { decision: 'approve' } });
    });

    it('fails rather than suspends when another node failed', async () => {
      const nodes = new ScriptedNodes();
      nodes.script('X', async () => {
        throw new NodeError('boom', 'X broke', false);
      });

      expect(await startRun({ graph, executeNode: nodes.execute }).result).toMatchObject({ outcome: 'failed', failedNodeId: 'X' });
    });

    it('skips the approval like any node when its trigger rule says so', async () => {
      const nodes = new ScriptedNodes();
      nodes.script('A', async () => {
        throw new NodeError('boom', 'A broke', false);
      });
      const { result, events } = startRun({ graph, executeNode: nodes.execute });

      expect((await result).outcome).toBe('failed');
      expect(eventTrace(events)).toEqual(['started:A', 'failed:A', 'skipped:P', 'skipped:X', 'skipped:C']);
    });
  });
});
