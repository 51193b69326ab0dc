import { describe, expect, it } from '@jest/globals';
import jsonata from 'jsonata';
import { graphOf, ScriptedNodes } from '../../../test/support/worker/dag/scripted-nodes.js';
import { startRun as start } from '../../../test/support/worker/dag/start-run.js';
import type { DagEvent, Evaluate, MapItemFacts, NodeContext } from './dag.types.js';
import { NodeError } from './node-error.js';

/** The sandbox's contract, evaluated in process. */
const evaluate: Evaluate = async (expression, input) => (await jsonata(expression).evaluate(input)) as unknown;

const mapOf = (config: Record<string, unknown>) =>
  graphOf([{ id: 'M', type: 'map', config: { items: 'input.items', node: { type: 'noop' }, ...config } } as never]);

/** Items' inner runs (they carry the map's node id), by item index. */
const itemCalls = (nodes: ScriptedNodes): number[] => nodes.callsOf('M').map((ctx) => ctx.input.index!);

const facts = (events: readonly DagEvent[]): MapItemFacts => {
  const batches = events.filter((e): e is Extract<DagEvent, { kind: 'map_items' }> => e.kind === 'map_items');
  return {
    started: batches.flatMap((b) => b.started),
    completed: batches.flatMap((b) => b.completed),
    failed: batches.flatMap((b) => b.failed),
  };
};

const later = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('runDag: map nodes', () => {
  it('gives each item { item, index, input, nodes } and outputs the results in item order', async () => {
    const nodes = new ScriptedNodes();
    nodes.script('M', async (ctx: NodeContext) => {
      // Later items finish first: the output keeps item order anyway.
      for (let i = 0; i < 3 - ctx.input.index!; i++) await later();
      return { doubled: (ctx.input.item as number) * 2, key: ctx.idempotencyKey, order: ctx.input.input['order'] };
    });
    const { result, events } = start({
      graph: mapOf({ node: { type: 'noop' } }),
      executeNode: nodes.execute,
      evaluate,
      input: { items: [1, 2, 3], order: 7 },
    });

    const outcome = await result;
    expect(outcome.outcome).toBe('succeeded');
    expect(outcome.output['M']).toEqual([
      { doubled: 2, key: 'exec-1:M:0', order: 7 },
      { doubled: 4, key: 'exec-1:M:1', order: 7 },
      { doubled: 6, key: 'exec-1:M:2', order: 7 },
    ]);
    const recorded = facts(events);
    expect([...recorded.started].sort()).toEqual([0, 1, 2]);
    expect(recorded.completed.map((c) => c.index)).toEqual([2, 1, 0]);
    // Every item fact is reported before the map's own end.
    expect(events.map((e) => e.kind).lastIndexOf('map_items')).toBeLessThan(events.map((e) => e.kind).indexOf('node_succeeded'));
  });

  it('runs at most `concurrency` items at once', async () => {
    const nodes = new ScriptedNodes();
    nodes.script('M', async () => {
      await later();
      return null;
    });
    const input = { items: Array.from({ length: 40 }, (_, i) => i) };
    const outcome = await start({ graph: mapOf({ node: { type: 'noop' }, concurrency: 3 }), executeNode: nodes.execute, evaluate, input })
      .result;
    expect(outcome.outcome).toBe('succeeded');
    expect(nodes.maxRunning).toBe(3);
    expect(itemCalls(nodes)).toHaveLength(40);
  });

  it('runs in a resumed attempt only the items that did not finish before, reusing the others', async () => {
    const nodes = new ScriptedNodes();
    nodes.script('M', async (ctx) => `new ${ctx.input.index}`);
    const outcome = await start({
      graph: mapOf({ node: { type: 'noop' } }),
      executeNode: nodes.execute,
      evaluate,
      input: { items: ['a', 'b', 'c', 'd'] },
      completedItems: { M: { '0': 'old 0', '2': 'old 2' } },
    }).result;
    expect(itemCalls(nodes).sort()).toEqual([1, 3]);
    expect(outcome.output['M']).toEqual(['old 0', 'new 1', 'old 2', 'new 3']);
  });

  it('retries a failing item per the inner node’s policy, and reruns only that item', async () => {
    const nodes = new ScriptedNodes();
    let failures = 0;
    nodes.script('M', async (ctx) => {
      if (ctx.input.index === 2 && failures++ < 2) throw new NodeError('flaky', 'try again');
      return ctx.input.index;
    });
    const node = { type: 'noop', retry: { maxAttempts: 3, initialIntervalMs: 0 } };
    const outcome = await start({ graph: mapOf({ node }), executeNode: nodes.execute, evaluate, input: { items: [0, 0, 0, 0] } }).result;
    expect(outcome.outcome).toBe('succeeded');
    expect(itemCalls(nodes).sort()).toEqual([0, 1, 2, 2, 2, 3]);
  });

  it('fails with the first failed item’s code once the running items finished; the next attempt reruns only it', async () => {
    const nodes = new ScriptedNodes();
    nodes.script('M', async (ctx) => {
      if (ctx.input.index === 1) throw new NodeError('http_503', 'upstream down');
      return ctx.input.index;
    });
    const graph = mapOf({ node: { type: 'noop' }, concurrency: 1 });
    const first = start({ graph, executeNode: nodes.execute, evaluate, input: { items: [0, 1, 2] } });
    const failed = await first.result;
    expect(failed.outcome === 'failed' && failed.error).toEqual({ code: 'http_503', message: 'item 1 of 3 failed: upstream down' });
    const recorded = facts(first.events);
    // With one item at a time, no item starts after the failure.
    expect(recorded.started).toEqual([0, 1]);
    expect(recorded.failed).toEqual([{ index: 1, error: { code: 'http_503', message: 'upstream down' } }]);

    const retried = new ScriptedNodes();
    retried.script('M', async (ctx) => ctx.input.index);
    const completedItems = { M: Object.fromEntries(recorded.completed.map(({ index, output }) => [index, output])) };
    const outcome = await start({ graph, executeNode: retried.execute, evaluate, input: { items: [0, 1, 2] }, completedItems }).result;
    expect(itemCalls(retried)).toEqual([1, 2]);
    expect(outcome.output['M']).toEqual([0, 1, 2]);
  });

  it('fails map_too_large beyond 10,000 items, running none', async () => {
    const nodes = new ScriptedNodes();
    const input = { items: Array.from({ length: 10_001 }, () => 0) };
    const outcome = await start({ graph: mapOf({ node: { type: 'noop' } }), executeNode: nodes.execute, evaluate, input }).result;
    expect(outcome.outcome === 'failed' && outcome.error.code).toBe('map_too_large');
    expect(itemCalls(nodes)).toHaveLength(0);
  });

  it('takes a single value as one item and nothing as no item', async () => {
    const run = async (items: unknown) =>
      (
        await start({ graph: mapOf({ node: { type: 'noop' } }), executeNode: new ScriptedNodes().execute, evaluate, input: { items } })
          .result
      ).output['M'];
    expect(await run('solo')).toEqual([{ by: 'M' }]);
    expect(await run(undefined)).toEqual([]);
  });
});
