import type { CommandMetadata, Decider } from '../../core/decider.js';
import type { TreeEvent } from './tree.events.js';

/** Takes a place in the tree for a child about to start, while the tree is open and the bound leaves room. */
export type AdmitToTree = {
  type: 'AdmitToTree';
  data: { childExecutionId: string; parentExecutionId: string; bound: number };
  metadata: CommandMetadata;
};

/** The root was cancelled: no child is admitted into its tree any more. */
export type CloseTree = {
  type: 'CloseTree';
  data: { reason: string };
  metadata: CommandMetadata;
};

export type TreeCommand = AdmitToTree | CloseTree;

export interface TreeState {
  /** The children admitted, by execution id (the root is not listed). */
  members: ReadonlySet<string>;
  closed: boolean;
}

const initialState = (): TreeState => ({ members: new Set(), closed: false });

/** How many executions the tree holds: its members and the root. */
export const treeExecutions = (state: TreeState): number => state.members.size + 1;

/** Why `childExecutionId` has no place in the tree, or null when it has one. */
export function refusal(state: TreeState, childExecutionId: string): 'closed' | 'full' | null {
  if (state.members.has(childExecutionId)) return null;
  return state.closed ? 'closed' : 'full';
}

function decide(command: TreeCommand, state: TreeState): TreeEvent[] {
  const at = command.metadata.now.toISOString();
  if (command.type === 'CloseTree') return state.closed ? [] : [{ type: 'TreeClosed', data: { reason: command.data.reason, at } }];
  const { childExecutionId, parentExecutionId, bound } = command.data;
  // Admitted already (a retried start): the same place.
  if (state.members.has(childExecutionId)) return [];
  if (state.closed || treeExecutions(state) >= bound) return [];
  const executions = treeExecutions(state) + 1;
  return [{ type: 'TreeMemberAdmitted', data: { childExecutionId, parentExecutionId, bound, executions, at } }];
}

function evolve(state: TreeState, event: TreeEvent): TreeState {
  if (event.type === 'TreeClosed') return { ...state, closed: true };
  return { ...state, members: new Set(state.members).add(event.data.childExecutionId) };
}

/**
 * The place-keeper of one sub-workflow tree. An admission is decided on the folded stream (open,
 * and fewer executions than the bound) and appended with the stream's expected revision, so two
 * managers starting children of one tree at once cannot both take its last place, and an
 * admission racing the root's cancel is either before the close (and cancelled with the tree) or
 * refused.
 */
export const treeDecider: Decider<TreeCommand, TreeEvent, TreeState> = { decide, evolve, initialState };
