/**
 * Streams of one workspace. The workspace id is the only part of each name, so it needs no
 * escaping (unlike `workflow-<ws>-<name>`).
 */

/** `workspace-<workspaceId>`: the workspace's settings, one event per change. */
export const workspaceStreamId = (workspaceId: string): string => `workspace-${workspaceId}`;

/** `quota-<workspaceId>`: the semaphore of the workspace's concurrency bound (slots granted and released). */
export const quotaStreamId = (workspaceId: string): string => `quota-${workspaceId}`;

export const WORKSPACE_STREAM_PREFIX = workspaceStreamId('');
export const QUOTA_STREAM_PREFIX = quotaStreamId('');
