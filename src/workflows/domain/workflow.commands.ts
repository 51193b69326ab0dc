import type { CommandMetadata } from '../../core/decider.js';
import type { WorkflowGraph } from './workflow-graph.schema.js';

/** Publish a graph as the next revision of a workflow; a no-op when it equals the latest one. */
export type PublishWorkflowRevision = {
  type: 'PublishWorkflowRevision';
  data: {
    workspaceId: string;
    name: string;
    workflowId: string;
    /** Validated and normalized (see parseWorkflowDefinition). */
    graph: WorkflowGraph;
    /** workflowGraphDigest(graph), computed by the handler. */
    digest: string;
  };
  metadata: CommandMetadata;
};

export type WorkflowCommand = PublishWorkflowRevision;
