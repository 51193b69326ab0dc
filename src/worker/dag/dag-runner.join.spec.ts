import { describe, expect, it } from '@jest/globals';
import { flushEventLoop } from '../../../test/support/worker/dag/deferred.js';
import { eventTrace, graphOf, ScriptedNodes } from '../../../test/support/worker/dag/scripted-nodes.js';
import { startRun as start } from '../../../test/support/worker/dag/start-run.js';

describe('runDag: joins (promise 5)', () => {
  describe('when A→B, A→D, B→D and B is held at a barrier', () => {
    it('does not start D until B has finished, and gives D the outputs of A and B', async () => {
      const nodes = new ScriptedNodes();
      const barrier = nodes.hold('B');
      const { result, events } = start({ graph: graphOf(['A', 'B', 'D'], 'A>B', 'A>D', 'B>D'), executeNode: nodes.execute });

      await nodes.started('B');
      await flushEventLoop();
      expect(nodes.callsOf('D')).toHaveLength(0);
      expect(eventTrace(events)).toEqual(['started:A', 'succeeded:A', 'started:B']);

      barrier.resolve({ total: 42 });
      const outcome = await result;

      expect(outcome.outcome).toBe('succeeded');
      expect(eventTrace(events)).toEqual(['started:A', 'succeeded:A', 'started:B', 'succeeded:B', 'started:D', 'succeeded:D']);
      expect(nodes.callsOf('D')[0].input).toEqual({ input: { order: 7 }, nodes: { A: { by: 'A' }, B: { total: 42 } } });
    });
  });

  describe('when the slow branch is deeper than the direct edge', () => {
    it('waits for the end of the long branch, whatever the depths', async () => {
      const nodes = new ScriptedNodes();
      const barrier = nodes.hold('B2');
      const graph = graphOf(['A', 'B1', 'B2', 'B3', 'C', 'D'], 'A>B1', 'B1>B2', 'B2>B3', 'B3>D', 'A>C', 'C>D', 'A>D');
      const { result } = start({ graph, executeNode: nodes.execute });

      await nodes.started('B2');
      await nodes.started('C');
      await flushEventLoop();
      expect(nodes.callsOf('D')).toHaveLength(0);
      expect(nodes.callsOf('B3')).toHaveLength(0);

      barrier.resolve('late');
      const outcome = await result;

      expect(outcome.outcome).toBe('succeeded');
      expect(Object.keys(nodes.callsOf('D')[0].input.nodes).sort()).toEqual(['A', 'B3', 'C']);
      expect(outcome.output).toEqual({ D: { by: 'D' } });
    });
  });

  describe('when a predecessor has not produced yet and later fails', () => {
    it('keeps an all_done join waiting, then runs it without the failed output', async () => {
      const nodes = new ScriptedNodes();
      const barrier = nodes.hold('B');
      const graph = graphOf(['A', 'B', { id: 'D', type: 'noop', trigger: 'all_done' }], 'A>B', 'A>D', 'B>D');
      const { result, events } = start({ graph, executeNode: nodes.execute });

      await nodes.started('B');
      await flushEventLoop();
      expect(nodes.callsOf('D')).toHaveLength(0);

      barrier.reject(new Error('B broke'));
      const outcome = await result;

      expect(eventTrace(events)).toEqual(['started:A', 'succeeded:A', 'started:B', 'failed:B', 'started:D', 'succeeded:D']);
      expect(nodes.callsOf('D')[0].input.nodes).toEqual({ A: { by: 'A' } });
      expect(outcome.outcome).toBe('failed');
    });
  });

  describe('when independent nodes are ready together', () => {
    it('runs them in parallel', async () => {
      const nodes = new ScriptedNodes();
      const barriers = ['A', 'B', 'C'].map((id) => nodes.hold(id));
      const { result } = start({ graph: graphOf(['A', 'B', 'C']), executeNode: nodes.execute, concurrency: 3 });

      await Promise.all(['A', 'B', 'C'].map((id) => nodes.started(id)));
      expect(nodes.running).toBe(3);

      barriers.forEach((barrier, i) => barrier.resolve(i));
      expect((await result).output).toEqual({ A: 0, B: 1, C: 2 });
    });

    it('never runs more than `concurrency` nodes at once', async () => {
      const ids = ['N1', 'N2', 'N3', 'N4', 'N5', 'N6'];
      const nodes = new ScriptedNodes();
      const barriers = new Map(ids.map((id) => [id, nodes.hold(id)]));
      const { result } = start({ graph: graphOf(ids), executeNode: nodes.execute, concurrency: 2 });

      for (const id of ids) {
        await nodes.started(id);
        await flushEventLoop();
        expect(nodes.running).toBeLessThanOrEqual(2);
        expect(nodes.calls).toHaveLength(Math.min(ids.indexOf(id) + 2, ids.length));
        barriers.get(id)!.resolve(id);
      }

      expect((await result).outcome).toBe('succeeded');
      expect(nodes.maxRunning).toBe(2);
    });

    it('refuses a concurrency below 1', async () => {
      const nodes = new ScriptedNodes();
      await expect(start({ graph: graphOf(['A']), executeNode: nodes.execute, concurrency: 0 }).result).rejects.toThrow(RangeError);
    });
  });
});
