import { describe, expect, it } from '@jest/globals';
import { performance } from 'node:perf_hooks';
import type { WorkflowNode } from '../../workflows/domain/workflow-graph.schema.js';
import { NodeError } from '../dag/node-error.js';
import { graphOf } from '../../../test/support/worker/dag/scripted-nodes.js';
import { createEgressGuard } from '../egress/egress-guard.js';
import { createNodeRegistry } from './node-registry.js';
import { contextFor } from '../../../test/support/worker/nodes/node-context.js';

const nodeOf = (spec: Parameters<typeof graphOf>[0][number]): WorkflowNode => graphOf([spec]).nodes[0];

describe('node registry: noop, delay, fail, approval', () => {
  const slept: number[] = [];
  const registry = createNodeRegistry({ egress: createEgressGuard(), sleep: async (ms) => void slept.push(ms) });

  it('noop outputs null', async () => {
    expect(await registry.execute(nodeOf('N'), contextFor('N'))).toBeNull();
  });

  it('delay waits its configured time', async () => {
    expect(await registry.execute(nodeOf({ id: 'D', type: 'delay', config: { ms: 1500 } }), contextFor('D'))).toBeNull();
    expect(slept).toEqual([1500]);
  });

  it('delay stops as soon as the run is aborted', async () => {
    const real = createNodeRegistry({ egress: createEgressGuard() });
    const controller = new AbortController();
    const waiting = real.execute(
      nodeOf({ id: 'D', type: 'delay', config: { ms: 3_600_000 } }),
      contextFor('D', { signal: controller.signal }),
    );
    const abortedAt = performance.now();
    controller.abort(new Error('cancelled'));

    await expect(waiting).rejects.toThrow();
    expect(performance.now() - abortedAt).toBeLessThan(1_000);
  });

  it('fail fails with its configured error', async () => {
    const node = nodeOf({ id: 'F', type: 'fail', config: { code: 'card_declined', message: 'declined', retryable: true } });
    const error = await registry.execute(node, contextFor('F')).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(NodeError);
    expect(error).toMatchObject({ code: 'card_declined', message: 'declined', retryable: true });
  });

  it('fail defaults to a non-retryable node_failed', async () => {
    await expect(registry.execute(nodeOf({ id: 'F', type: 'fail' }), contextFor('F'))).rejects.toMatchObject({
      code: 'node_failed',
      retryable: false,
    });
  });

  it('refuses to execute an approval (the runner suspends there)', async () => {
    await expect(registry.execute(nodeOf({ id: 'P', type: 'approval' }), contextFor('P'))).rejects.toMatchObject({
      code: 'approval_not_executable',
    });
  });
});
