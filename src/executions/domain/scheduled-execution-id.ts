import { uuidV5 } from '../../core/ids.js';

/**
 * The execution a schedule fire starts: a name-based uuid of the workspace, the schedule and the
 * fire time, so every scheduler that starts the same fire meets at one stream, where one start
 * wins and the others are replays. Idempotency-Key starts derive theirs from `execution:…`,
 * which no name here begins with, so a key can never take a fire's execution.
 */
export function scheduledExecutionId(workspaceId: string, schedule: string, fireTime: string): string {
  return uuidV5(`schedule:${workspaceId}:${schedule}:${fireTime}`);
}
