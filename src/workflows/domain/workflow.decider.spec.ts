import { describe, expect, it } from '@jest/globals';
import { deciderSpecification } from '../../../test/support/core/decider-specification.js';
import { InvalidStateError } from '../../core/errors.js';
import type { PublishWorkflowRevision } from './workflow.commands.js';
import { workflowDecider } from './workflow.decider.js';
import type { WorkflowRevisionPublished } from './workflow.events.js';
import { workflowGraphDigest } from './workflow-digest.js';
import type { WorkflowGraph } from './workflow-graph.schema.js';
import { parseWorkflowDefinition } from './workflow-graph.validation.js';
import { workflowIdOf } from './workflow-identity.js';

const spec = deciderSpecification(workflowDecider);

const graphOf = (...ids: string[]): WorkflowGraph => {
  const result = parseWorkflowDefinition({
    nodes: ids.map((id) => ({ id, type: 'noop' })),
    edges: ids.slice(1).map((id, i) => ({ from: ids[i], to: id })),
  });
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.graph;
};

const v1 = graphOf('a');
const v2 = graphOf('a', 'b');
const workflowId = workflowIdOf('acme', 'orders');
const now = new Date('2030-01-02T03:04:05.000Z');

const publish = (graph: WorkflowGraph, overrides: Partial<PublishWorkflowRevision['data']> = {}): PublishWorkflowRevision => ({
  type: 'PublishWorkflowRevision',
  data: { workspaceId: 'acme', name: 'orders', workflowId, graph, digest: workflowGraphDigest(graph), ...overrides },
  metadata: { now, actor: 'alice' },
});

const published = (revision: number, graph: WorkflowGraph, at = now, by = 'alice'): WorkflowRevisionPublished => ({
  type: 'WorkflowRevisionPublished',
  data: {
    workflowId,
    workspaceId: 'acme',
    name: 'orders',
    revision,
    digest: workflowGraphDigest(graph),
    graph,
    publishedBy: by,
    publishedAt: at.toISOString(),
  },
});

const earlier = new Date('2029-12-31T00:00:00.000Z');

describe('publishing a workflow revision', () => {
  describe('when the workflow was never published', () => {
    it('publishes revision 1, by the actor, at the command time', () => {
      spec
        .given([])
        .when(publish(v1))
        .then([published(1, v1)]);
    });
  });

  describe('when the graph equals the latest revision', () => {
    it('publishes nothing', () => {
      spec
        .given([published(1, v1, earlier)])
        .when(publish(v1))
        .thenNothingHappens();
    });

    it('publishes nothing even after several revisions', () => {
      spec
        .given([published(1, v1, earlier), published(2, v2, earlier)])
        .when(publish(v2))
        .thenNothingHappens();
    });
  });

  describe('when the graph differs from the latest revision', () => {
    it('publishes the next revision', () => {
      spec
        .given([published(1, v1, earlier)])
        .when(publish(v2))
        .then([published(2, v2)]);
    });

    it('publishes a new revision for a graph equal to an older one', () => {
      spec
        .given([published(1, v1, earlier), published(2, v2, earlier)])
        .when(publish(v1))
        .then([published(3, v1)]);
    });
  });

  describe('when the stream belongs to another workflow', () => {
    it('rejects the command rather than write into it', () => {
      const intruder = workflowIdOf('acme-prod', 'orders');
      spec
        .given([published(1, v1, earlier)])
        .when(publish(v2, { workflowId: intruder }))
        .thenThrows(InvalidStateError);
    });

    it('rejects a command for another workspace or name', () => {
      spec
        .given([published(1, v1, earlier)])
        .when(publish(v2, { workspaceId: 'other' }))
        .thenThrows('invalid_state');
      spec
        .given([published(1, v1, earlier)])
        .when(publish(v2, { name: 'refunds' }))
        .thenThrows('invalid_state');
    });
  });
});

describe('the workflow state', () => {
  it('starts unpublished', () => {
    expect(workflowDecider.initialState()).toEqual({ status: 'unpublished' });
  });

  it('records the identity and the first revision once published', () => {
    spec
      .given([])
      .when(publish(v1))
      .thenState({
        status: 'published',
        workflowId,
        workspaceId: 'acme',
        name: 'orders',
        latestRevision: 1,
        latestDigest: workflowGraphDigest(v1),
      });
  });

  it('tracks the latest revision and its digest', () => {
    spec
      .given([published(1, v1, earlier), published(2, v2, earlier)])
      .when(publish(v1))
      .thenState({
        status: 'published',
        workflowId,
        workspaceId: 'acme',
        name: 'orders',
        latestRevision: 3,
        latestDigest: workflowGraphDigest(v1),
      });
  });
});
