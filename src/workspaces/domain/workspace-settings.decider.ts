import type { CommandMetadata, Decider } from '../../core/decider.js';
import { DEFAULT_WORKSPACE_SETTINGS, type WorkspaceEvent, type WorkspaceSettings } from './workspace-settings.events.js';

/** Replaces a workspace's settings with these (all of them). */
export type ChangeWorkspaceSettings = {
  type: 'ChangeWorkspaceSettings';
  data: { workspaceId: string; settings: WorkspaceSettings };
  metadata: CommandMetadata;
};

export type WorkspaceCommand = ChangeWorkspaceSettings;

/** A workspace's settings as of its stream's last event; the defaults until the first change. */
export interface WorkspaceState {
  settings: WorkspaceSettings;
  changedBy: string | null;
  changedAt: string | null;
}

const initialState = (): WorkspaceState => ({ settings: DEFAULT_WORKSPACE_SETTINGS, changedBy: null, changedAt: null });

function sameSettings(a: WorkspaceSettings, b: WorkspaceSettings): boolean {
  return a.maxConcurrentExecutions === b.maxConcurrentExecutions && a.maxExecutionsPerTree === b.maxExecutionsPerTree;
}

function decide(command: WorkspaceCommand, state: WorkspaceState): WorkspaceEvent[] {
  const { data, metadata } = command;
  // Settings equal to the current ones are no change: nothing to record.
  if (sameSettings(state.settings, data.settings)) return [];
  return [
    {
      type: 'WorkspaceSettingsChanged',
      data: { workspaceId: data.workspaceId, settings: data.settings, changedBy: metadata.actor, changedAt: metadata.now.toISOString() },
    },
  ];
}

function evolve(_state: WorkspaceState, event: WorkspaceEvent): WorkspaceState {
  const { settings, changedBy, changedAt } = event.data;
  return { settings, changedBy, changedAt };
}

/** The workspace stream's rules: every change records the whole settings; an unchanged PUT records nothing. */
export const workspaceDecider: Decider<WorkspaceCommand, WorkspaceEvent, WorkspaceState> = { decide, evolve, initialState };
