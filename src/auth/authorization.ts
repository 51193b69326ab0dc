import { NotFoundError } from '../core/errors.js';
import { ForbiddenError } from './auth.errors.js';
import { roleAtLeast, TASK_WORKER_ROLE, type GlobalRole, type Principal, type WorkspaceGrant, type WorkspaceRole } from './principal.js';

// Handlers that authorize also name the Principal: one import serves both.
export type { GlobalRole, Principal, WorkspaceGrant, WorkspaceRole } from './principal.js';

/** The principal's role in a workspace, or null when it has none there. */
export function workspaceRoleOf(principal: Principal, workspaceId: string): WorkspaceGrant | null {
  return principal.workspaces.get(workspaceId) ?? null;
}

/** True when the principal holds at least `minRole` in the workspace. */
export function hasWorkspaceRole(principal: Principal, workspaceId: string, minRole: WorkspaceRole): boolean {
  const role = workspaceRoleOf(principal, workspaceId);
  return role !== null && roleAtLeast(role, minRole);
}

/**
 * Tenancy from ownership (promise 10, docs/architecture.md): call it with the workspace that owns the resource
 * (execution → its workspace), never with a workspace id taken from the request alone.
 * No role at all → NotFoundError with `notFoundMessage`, which must be the very message a
 * missing resource gets, so the answer does not reveal that the resource exists.
 * A lower role → ForbiddenError.
 */
export function requireWorkspaceRole(
  principal: Principal,
  workspaceId: string,
  minRole: WorkspaceRole,
  notFoundMessage = `workspace ${workspaceId} not found`,
): void {
  const role = workspaceRoleOf(principal, workspaceId);
  if (role === null) throw new NotFoundError(notFoundMessage);
  if (!roleAtLeast(role, minRole)) {
    throw new ForbiddenError(`this action requires the ${minRole} role in workspace ${workspaceId}`, { requiredRole: minRole });
  }
}

/** Global roles do not hide anything, so a missing one is a plain 403. */
export function requireGlobalRole(principal: Principal, role: GlobalRole): void {
  if (!principal.global.has(role)) {
    throw new ForbiddenError(`this action requires the global ${role} role`, { requiredRole: role });
  }
}

/**
 * The task protocol (poll, heartbeat, complete) is for the workspace's `task-worker` grant only:
 * no role at all is the same 404 as a missing resource, any other role is 403.
 */
export function requireTaskWorker(principal: Principal, workspaceId: string, notFoundMessage = `workspace ${workspaceId} not found`): void {
  const role = workspaceRoleOf(principal, workspaceId);
  if (role === null) throw new NotFoundError(notFoundMessage);
  if (role !== TASK_WORKER_ROLE) {
    throw new ForbiddenError(`this action requires the ${TASK_WORKER_ROLE} role in workspace ${workspaceId}`, {
      requiredRole: TASK_WORKER_ROLE,
    });
  }
}
