import { describe, expect, it } from '@jest/globals';
import type { WorkflowNode } from '../../workflows/domain/workflow-graph.schema.js';
import { NodeError } from '../dag/node-error.js';
import { graphOf } from '../../../test/support/worker/dag/scripted-nodes.js';
import { createEgressGuard } from '../egress/egress-guard.js';
import { createNodeRegistry } from './node-registry.js';
import { contextFor } from '../../../test/support/worker/nodes/node-context.js';

const nodeOf = (spec: Parameters<typeof graphOf>[0][number]): WorkflowNode => graphOf([spec]).nodes[0];

describe('node registry: noop, delay, wait_signal, fail, approval', () => {
  const registry = createNodeRegistry({ egress: createEgressGuard() });

  it('noop outputs null', async () => {
    expect(await registry.execute(nodeOf('N'), contextFor('N'))).toBeNull();
  });

  it('delay and wait_signal compute nothing in the worker: the control plane keeps their waits', async () => {
    expect(await registry.execute(nodeOf({ id: 'D', type: 'delay', config: { ms: 3_600_000 } }), contextFor('D'))).toBeNull();
    expect(await registry.execute(nodeOf({ id: 'S', type: 'wait_signal', config: { name: 'go' } }), contextFor('S'))).toBeNull();
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
