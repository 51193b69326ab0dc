/**
 * `schedule-<workspaceId>-<name>`: one schedule's definition and every fire decided for it. A
 * `-` in the workspace id is written `~` (outside the alphabet), as in workflow streams, so the
 * first `-` after the prefix separates workspace and name.
 */
export function scheduleStreamId(workspaceId: string, name: string): string {
  return `schedule-${workspaceId.replaceAll('-', '~')}-${name}`;
}

export const SCHEDULE_STREAM_PREFIX = 'schedule-';

/**
 * `schedules-<workspaceId>`: the workspace's schedule register, the names that hold one of its
 * places for schedules. Not under `schedule-`: the scheduler and the projection follow that prefix.
 */
export function scheduleRegisterStreamId(workspaceId: string): string {
  return `schedules-${workspaceId}`;
}
