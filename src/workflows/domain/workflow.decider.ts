import type { Decider } from '../../core/decider.js';
import { InvalidStateError } from '../../core/errors.js';
import type { PublishWorkflowRevision, WorkflowCommand } from './workflow.commands.js';
import type { WorkflowEvent } from './workflow.events.js';

/** What deciding needs to know about a workflow stream: its identity and its latest revision. */
export type WorkflowState =
  | { status: 'unpublished' }
  | {
      status: 'published';
      workflowId: string;
      workspaceId: string;
      name: string;
      latestRevision: number;
      latestDigest: string;
    };

const initialState = (): WorkflowState => ({ status: 'unpublished' });

function publishRevision(command: PublishWorkflowRevision, state: WorkflowState): WorkflowEvent[] {
  const { workspaceId, name, workflowId, graph, digest } = command.data;
  if (state.status === 'published') {
    // Defence in depth: stream ids are built to be unique per (workspace, name), and a
    // mismatch here would mean one tenant writing into another's workflow.
    if (state.workflowId !== workflowId || state.workspaceId !== workspaceId || state.name !== name) {
      throw new InvalidStateError(`this stream belongs to workflow ${state.workspaceId}/${state.name}`, {
        workflowId: state.workflowId,
      });
    }
    // Only the latest revision counts: going back to an older graph is a new revision.
    if (state.latestDigest === digest) return [];
  }
  return [
    {
      type: 'WorkflowRevisionPublished',
      data: {
        workflowId,
        workspaceId,
        name,
        revision: state.status === 'published' ? state.latestRevision + 1 : 1,
        digest,
        graph,
        publishedBy: command.metadata.actor,
        publishedAt: command.metadata.now.toISOString(),
      },
    },
  ];
}

function decide(command: WorkflowCommand, state: WorkflowState): WorkflowEvent[] {
  switch (command.type) {
    case 'PublishWorkflowRevision':
      return publishRevision(command, state);
    default: {
      const unknown: never = command.type;
      throw new Error(`unknown workflow command ${String(unknown)}`);
    }
  }
}

function evolve(state: WorkflowState, event: WorkflowEvent): WorkflowState {
  switch (event.type) {
    case 'WorkflowRevisionPublished': {
      const { workflowId, workspaceId, name, revision, digest } = event.data;
      return { status: 'published', workflowId, workspaceId, name, latestRevision: revision, latestDigest: digest };
    }
    default: {
      const unknown: never = event.type;
      throw new Error(`unknown workflow event ${String(unknown)}`);
    }
  }
}

/** The workflow stream's rules: revisions are numbered 1, 2, … and only a changed graph adds one. */
export const workflowDecider: Decider<WorkflowCommand, WorkflowEvent, WorkflowState> = {
  decide,
  evolve,
  initialState,
};
