import { type Principal, requireWorkspaceRole } from '../../auth/authorization.js';
import type { ExecutionState } from '../domain/execution.state.js';

/**
 * An operator command on an existing execution: authorization derives from the execution's own
 * workspace (promise 10, docs/architecture.md), so one the caller cannot read answers the same 404 as a missing one.
 */
export function authorizeOperator(principal: Principal, state: ExecutionState): void {
  if (state.status !== 'not_started') requireWorkspaceRole(principal, state.workspaceId, 'operator', 'execution not found');
}
