import { requireTaskWorker, type Principal } from '../../auth/authorization.js';
import { MAX_RESULT_MESSAGE_BYTES } from '../../core/bus.port.js';
import { NotFoundError, OutputTooLargeError } from '../../core/errors.js';
import type { ExecutionState, StartedExecution, TaskRecord } from '../../executions/domain/execution.state.js';
import { parseTaskId } from '../../executions/domain/tasks.js';

/** What the protocol says when the task id names nothing the caller may see: the same for both. */
export const TASK_NOT_FOUND = 'task not found';

/**
 * Largest task output recorded: what a node's output may be, so that a task node's
 * result is no larger than any other node's (room is left for a result message's envelope).
 */
export const MAX_TASK_OUTPUT_BYTES = MAX_RESULT_MESSAGE_BYTES - 4 * 1024;

/** The execution a task id names; a text that is no task id is a missing task. */
export function executionOfTask(taskId: string): string {
  const parsed = parseTaskId(taskId);
  if (parsed === null) throw new NotFoundError(TASK_NOT_FOUND);
  return parsed.executionId;
}

/**
 * Tenancy from ownership (promise 10): the task's workspace is its execution's, and only that
 * workspace's task-worker grant may act on it; no role there is the 404 of a missing task.
 */
export function authorizeTaskWorker(principal: Principal, state: ExecutionState): StartedExecution {
  if (state.status === 'not_started') throw new NotFoundError(TASK_NOT_FOUND);
  requireTaskWorker(principal, state.workspaceId, TASK_NOT_FOUND);
  return state;
}

export function taskIn(state: ExecutionState, taskId: string): TaskRecord {
  const task = state.status === 'not_started' ? undefined : state.tasks[taskId];
  if (task === undefined) throw new Error(`task ${taskId} is missing after the decider accepted a command on it`);
  return task;
}

/** Refuses an output larger than a node's output may be, before anything is decided. */
export function requireWithinOutputLimit(what: string, value: unknown): void {
  if (value === undefined) return;
  const bytes = Buffer.byteLength(JSON.stringify(value), 'utf8');
  if (bytes > MAX_TASK_OUTPUT_BYTES) {
    throw new OutputTooLargeError(
      `the ${what} is ${bytes} bytes as JSON; the limit is ${MAX_TASK_OUTPUT_BYTES} bytes`,
      MAX_TASK_OUTPUT_BYTES,
    );
  }
}

/** A third of the lease: three heartbeats fit in one, so one lost heartbeat does not cost it. */
export function taskHeartbeatInterval(heartbeatTimeoutMs: number): number {
  return Math.max(100, Math.floor(heartbeatTimeoutMs / 3));
}

/** What a poller is handed: a task it claimed (by a poll, or with its previous task's completion). */
export interface PolledTask {
  taskId: string;
  executionId: string;
  nodeId: string;
  attempt: number;
  input: unknown;
  fencingToken: number;
  leaseExpiresAt: string;
  heartbeatIntervalMs: number;
}

/** The claimed task as the poller is handed it; null when the record holds no live claim. */
export function polledTask(executionId: string, claimed: TaskRecord): PolledTask | null {
  if (claimed.status !== 'claimed' || claimed.fencingToken === null || claimed.leaseExpiresAt === null) return null;
  return {
    taskId: claimed.taskId,
    executionId,
    nodeId: claimed.nodeId,
    attempt: claimed.taskAttempt,
    input: claimed.input ?? null,
    fencingToken: claimed.fencingToken,
    leaseExpiresAt: claimed.leaseExpiresAt,
    heartbeatIntervalMs: taskHeartbeatInterval(claimed.heartbeatTimeoutMs),
  };
}
