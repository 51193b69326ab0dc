import { z } from 'zod';
import { IDENTIFIER_PATTERN } from '../core/ids.js';

/** Workspace roles, weakest first: each includes everything the ones before it may do. */
export const WORKSPACE_ROLES = ['viewer', 'operator', 'editor', 'admin'] as const;
export type WorkspaceRole = (typeof WORKSPACE_ROLES)[number];

/**
 * Outside the ladder: `task-worker` may poll, heartbeat and complete the workspace's tasks
 * (docs/api.md, "Task queues") and nothing else; no ladder role includes it.
 */
export const TASK_WORKER_ROLE = 'task-worker';
export const WORKSPACE_GRANTS = [...WORKSPACE_ROLES, TASK_WORKER_ROLE] as const;
/** What a token may hold in one workspace: a role of the ladder, or `task-worker`. */
export type WorkspaceGrant = (typeof WORKSPACE_GRANTS)[number];

/**
 * Roles outside any workspace: `worker` runs attempts, `system-admin` uses admin endpoints,
 * `metrics` reads `/metrics` on the API's port (a scraper's token, which may do nothing else).
 */
export const GLOBAL_ROLES = ['worker', 'system-admin', 'metrics'] as const;
export type GlobalRole = (typeof GLOBAL_ROLES)[number];

export { IDENTIFIER_PATTERN };

export const workspaceIdSchema = z
  .string()
  .regex(IDENTIFIER_PATTERN, 'a workspace id must be 1-64 characters of A-Z, a-z, 0-9, "_" or "-"');

/** Who is calling, as authenticated from a bearer token. */
export interface Principal {
  readonly subject: string;
  readonly workspaces: ReadonlyMap<string, WorkspaceGrant>;
  readonly global: ReadonlySet<GlobalRole>;
  /**
   * sha256 of the token that authenticated this principal: lets a long-lived request (SSE)
   * ask the TokenRegistry whether the grant still holds, without keeping the secret around.
   */
  readonly tokenId: string;
}

/** True when `role` includes everything `minRole` may do; `task-worker` includes no role of the ladder. */
export function roleAtLeast(role: WorkspaceGrant, minRole: WorkspaceRole): boolean {
  if (role === TASK_WORKER_ROLE) return false;
  return WORKSPACE_ROLES.indexOf(role) >= WORKSPACE_ROLES.indexOf(minRole);
}
