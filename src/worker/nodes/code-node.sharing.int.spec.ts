import { afterAll, describe, expect, it } from '@jest/globals';
import jsonata from 'jsonata';
import { CodeSandbox } from '../../sandbox/code-sandbox.js';
import type { NodeOfType } from '../../workflows/domain/workflow-graph.schema.js';
import type { DagEvent, Evaluate } from '../dag/dag.types.js';
import { graphOf } from '../../../test/support/worker/dag/scripted-nodes.js';
import { startRun } from '../../../test/support/worker/dag/start-run.js';
import { contextFor } from '../../../test/support/worker/nodes/node-context.js';
import { createCodeNode } from './code-node.js';

// Two interpreter threads, as a worker has by default; real threads: integration tier.
const sandbox = new CodeSandbox({ threads: 2 });
afterAll(() => sandbox.close());
const code = createCodeNode(sandbox);

const codeNode = (source: string) =>
  graphOf([{ id: 'C', type: 'code', config: { language: 'javascript', source, timeoutMs: 10_000 } }]).nodes[0] as NodeOfType<'code'>;

/** A code node of `workspaceId` that loops until released (its run's signal aborts): its thread is held meanwhile. */
function holding(workspaceId: string) {
  const controller = new AbortController();
  const outcome = code(codeNode('for (;;) {}'), { ...contextFor('C', { signal: controller.signal }), workspaceId }).then(
    () => 'returned',
    (error: unknown) => (controller.signal.aborted && error === controller.signal.reason ? 'released' : error),
  );
  return { outcome, release: () => controller.abort() };
}

describe('code nodes of two workspaces on one worker', () => {
  it('given ws-a’s code holding both threads with six more waiting, then ws-b’s code runs on the next free thread, ahead of them', async () => {
    // Submitted together: a1 and a2 take the two threads at once, a3 to a8 and then b1 wait.
    const a = Array.from({ length: 8 }, () => holding('ws-a'));
    const b = code(codeNode('return 42'), { ...contextFor('C'), workspaceId: 'ws-b' });

    a[0].release();
    expect(await b).toBe(42);
    // None of ws-a's other runs ended before b1 did: each ends only now, by its release.
    for (const run of a) run.release();
    expect(await Promise.all(a.map((run) => run.outcome))).toEqual(a.map(() => 'released'));
  });
});

describe('code items of a map that failed', () => {
  const evaluate: Evaluate = async (expression, input) => (await jsonata(expression).evaluate(input)) as unknown;
  const completed = (events: readonly DagEvent[]) =>
    events.flatMap((event) => (event.kind === 'map_items' ? event.completed.map((item) => item.index) : []));

  it('never start once the map failed: items still waiting for a thread are dropped', async () => {
    const oneThread = new CodeSandbox({ threads: 1 });
    try {
      const codeOnOneThread = createCodeNode(oneThread);
      const source = 'if (input.index === 0) throw new Error("item 0 fails"); return input.index';
      const graph = graphOf([
        {
          id: 'M',
          type: 'map',
          config: { items: 'input.items', concurrency: 4, node: { type: 'code', config: { language: 'javascript', source } } },
        } as never,
      ]);
      const { result, events } = startRun({
        graph,
        input: { items: [0, 1, 2, 3] },
        evaluate,
        executeNode: (node, ctx) => codeOnOneThread(node as NodeOfType<'code'>, ctx),
      });

      const outcome = await result;
      expect(outcome.outcome === 'failed' && outcome.error).toMatchObject({
        code: 'code_error',
        message: 'item 0 of 4 failed: Error: item 0 fails',
      });
      // Item 1 took the thread as item 0 gave it back, before the map learnt of the failure; 2 and 3 never ran.
      expect(completed(events)).toEqual([1]);
    } finally {
      await oneThread.close();
    }
  });
});
