import type { WorkspaceSettingsStream } from './workspace-streams.js';

/** A workspace's settings as the API shows them, with who changed them last and where that change is in the log. */
export interface WorkspaceSettingsView {
  workspaceId: string;
  maxConcurrentExecutions: number | null;
  /** null: the deployment's default. */
  maxExecutionsPerTree: number | null;
  updatedAt: string | null;
  updatedBy: string | null;
  /** The last change's event; null while the settings were never changed. */
  position: string | null;
}

export function toSettingsView(workspaceId: string, stream: WorkspaceSettingsStream): WorkspaceSettingsView {
  const { settings, changedAt, changedBy } = stream.state;
  return {
    workspaceId,
    maxConcurrentExecutions: settings.maxConcurrentExecutions,
    maxExecutionsPerTree: settings.maxExecutionsPerTree,
    updatedAt: changedAt,
    updatedBy: changedBy,
    position: stream.position,
  };
}
