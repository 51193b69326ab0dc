import { describe, expect, it } from '@jest/globals';
import { NodeError } from './node-error.js';
import { eventTrace, graphOf, ScriptedNodes } from '../../../test/support/worker/dag/scripted-nodes.js';
import { startRun } from '../../../test/support/worker/dag/start-run.js';

const failing = (code: string) => async () => {
  throw new NodeError(code, `${code} happened`, false);
};

describe('runDag: trigger rules and skips', () => {
  describe('when every node succeeds', () => {
    it('succeeds with the outputs of the leaves', async () => {
      const nodes = new ScriptedNodes();
      const { result, events } = startRun({ graph: graphOf(['A', 'B', 'C'], 'A>B', 'A>C'), executeNode: nodes.execute });

      const outcome = await result;

      expect(outcome).toMatchObject({ outcome: 'succeeded', output: { B: { by: 'B' }, C: { by: 'C' } } });
      expect(eventTrace(events)).toEqual(['started:A', 'succeeded:A', 'started:B', 'started:C', 'succeeded:B', 'succeeded:C']);
      expect(nodes.callsOf('B')[0].idempotencyKey).toBe('exec-1:B');
    });
  });

  describe('when a node fails', () => {
    const graph = graphOf(
      [
        'A',
        'S',
        'B',
        'C',
        { id: 'D', type: 'noop', trigger: 'all_done' },
        { id: 'E', type: 'noop', trigger: 'one_success' },
        { id: 'F', type: 'noop', trigger: 'one_success' },
      ],
      'A>B',
      'B>C',
      'B>D',
      'A>E',
      'S>E',
      'A>F',
      'B>F',
    );

    it('skips all_success successors and cascades the skip', async () => {
      const nodes = new ScriptedNodes();
      nodes.script('A', failing('boom'));
      const { result, events } = startRun({ graph, executeNode: nodes.execute });

      const outcome = await result;

      expect(events).toContainEqual({ kind: 'node_skipped', nodeId: 'B', reason: 'all_success: predecessor A failed' });
      expect(events).toContainEqual({ kind: 'node_skipped', nodeId: 'C', reason: 'all_success: predecessor B skipped' });
      expect(nodes.callsOf('B')).toHaveLength(0);
      expect(nodes.callsOf('C')).toHaveLength(0);
      expect(outcome.nodes['C']).toEqual({ status: 'skipped', reason: 'all_success: predecessor B skipped' });
    });

    it('runs all_done and one_success successors with only the outputs that were produced', async () => {
      const nodes = new ScriptedNodes();
      nodes.script('A', failing('boom'));
      const { result, events } = startRun({ graph, executeNode: nodes.execute });

      await result;

      expect(nodes.callsOf('D')[0].input.nodes).toEqual({});
      expect(nodes.callsOf('E')[0].input.nodes).toEqual({ S: { by: 'S' } });
      expect(events).toContainEqual({ kind: 'node_skipped', nodeId: 'F', reason: 'one_success: no predecessor succeeded' });
    });

    it('fails the run with the failing node error, even though an all_done successor ran', async () => {
      const nodes = new ScriptedNodes();
      nodes.script('A', failing('boom'));
      const { result, events } = startRun({ graph, executeNode: nodes.execute });

      const outcome = await result;

      expect(outcome).toMatchObject({
        outcome: 'failed',
        failedNodeId: 'A',
        error: { code: 'boom', message: 'boom happened', retryable: false },
        output: { D: { by: 'D' }, E: { by: 'E' } },
      });
      expect(events.filter((e) => e.kind === 'node_failed')).toEqual([
        { kind: 'node_failed', nodeId: 'A', error: { code: 'boom', message: 'boom happened', retryable: false } },
      ]);
    });

    it('reports the error of the node that failed first', async () => {
      const nodes = new ScriptedNodes();
      const slow = nodes.hold('X');
      nodes.script('A', failing('first'));
      const { result } = startRun({ graph: graphOf(['X', 'A']), executeNode: nodes.execute });

      await nodes.started('X');
      await nodes.started('A');
      slow.reject(new NodeError('second', 'later', false));

      expect(await result).toMatchObject({ outcome: 'failed', failedNodeId: 'A', error: { code: 'first' } });
    });

    it('turns an unexpected rejection into a node_error failure', async () => {
      const nodes = new ScriptedNodes();
      nodes.script('A', async () => {
        throw new TypeError('x is undefined');
      });
      const outcome = await startRun({ graph: graphOf(['A']), executeNode: nodes.execute }).result;

      expect(outcome).toMatchObject({ outcome: 'failed', error: { code: 'node_error', message: 'x is undefined' } });
    });
  });
});
