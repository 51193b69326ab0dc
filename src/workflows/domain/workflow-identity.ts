import { z } from 'zod';
import { IDENTIFIER_PATTERN, uuidV5 } from '../../core/ids.js';

export { IDENTIFIER_PATTERN };

const identifier = (what: string) => z.string().regex(IDENTIFIER_PATTERN, `${what} must be 1-64 characters of A-Z, a-z, 0-9, "_" or "-"`);

export const workspaceIdSchema = identifier('a workspace id');
export const workflowNameSchema = identifier('a workflow name');
export const nodeIdSchema = identifier('a node id');

/**
 * Stream of one workflow: `workflow-<workspaceId>-<name>`. Both parts may contain "-", so the
 * literal form is ambiguous (workspace "acme-prod" + "orders" vs "acme" + "prod-orders") and one
 * tenant could squat another's stream. "-" in the workspace id is written as "~" (outside the
 * alphabet), which keeps the id readable and makes the first "-" after the prefix the separator.
 */
export function workflowStreamId(workspaceId: string, name: string): string {
  return `workflow-${workspaceId.replaceAll('-', '~')}-${name}`;
}

/** Stable id of the workflow named `name` in a workspace: the same pair always yields the same uuid. */
export function workflowIdOf(workspaceId: string, name: string): string {
  // ":" is outside the identifier alphabet, so distinct pairs never produce the same name.
  return uuidV5(`workflow:${workspaceId}:${name}`);
}
