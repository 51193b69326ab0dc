import { InvalidStateError, LeaseExpiredError, NotFoundError, StaleAttemptError } from '../../core/errors.js';
import type {
  ClaimTask,
  CompleteAttempt,
  CompleteTask,
  HeartbeatTask,
  RecordNodeResult,
  TaskFence,
  TimeOutTask,
} from './execution.commands.js';
import type { ExecutionError, ExecutionEvent, RetryPolicy, Wait } from './execution.events.js';
import {
  type StartedExecution,
  type TaskRecord,
  currentAttempt,
  evolve,
  isFinal,
  nextAttemptNumber,
  unscheduledFirstAttemptId,
} from './execution.state.js';
import { backoffMs, shouldRetry } from './retry-policy.js';
import { type ExecutionLimits, requireProgressWithinLimit } from './execution-limits.js';
import { currentTryAttemptIds, nextStep } from './task-successors.js';
import { isSubworkflowNode, liveChildOf } from './subworkflow-children.js';

/**
 * Task nodes: a step that runs in the user's own code, which polls for it over HTTP. A waiting
 * step is a fact on the execution stream, not a process holding a lease: the worker running the
 * graph asks for the task (`node_waiting`) and its attempt suspends once nothing else can run;
 * the task's claim, heartbeats and end are commands on the same stream, and the end records the
 * node's result and decides what follows (task-successors.ts): the next tasks, the execution's
 * end, or a resume attempt (docs/architecture.md, "Waiting steps").
 */

const iso = (d: Date) => d.toISOString();
const plus = (d: Date, ms: number) => new Date(d.getTime() + ms).toISOString();

/** Lease of a claim and of each heartbeat when the node names none. */
export const DEFAULT_TASK_HEARTBEAT_TIMEOUT_MS = 30_000;

/** `<executionId>.<nodeId>.<seq>`: execution ids are UUIDs and node ids have no `.`, so it splits back. */
export function taskIdOf(executionId: string, nodeId: string, seq: number): string {
  return `${executionId}.${nodeId}.${seq}`;
}

/** The execution a task id belongs to, or null when the text is no task id. */
export function parseTaskId(taskId: string): { executionId: string; nodeId: string; seq: number } | null {
  const match = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.([A-Za-z0-9_-]{1,64})\.([1-9][0-9]{0,5})$/.exec(taskId);
  return match === null ? null : { executionId: match[1], nodeId: match[2], seq: Number(match[3]) };
}

interface TaskNodeConfig {
  queue: string;
  timeoutMs: number | null;
  heartbeatTimeoutMs: number;
  retry: RetryPolicy;
}

const NO_RETRY: RetryPolicy = { maxAttempts: 1, initialIntervalMs: 1_000, backoffCoefficient: 2, maxIntervalMs: 60_000, nonRetryable: [] };

/** The task node's settings, from the execution's own graph snapshot (validated at publish). */
function taskNode(s: StartedExecution, nodeId: string): TaskNodeConfig {
  const node = s.workflow.graph.nodes.find((n) => n.id === nodeId);
  if (node?.type !== 'task') throw new InvalidStateError(`node ${nodeId} is not a task node`);
  const config = (node['config'] ?? {}) as { queue?: string; timeoutMs?: number; heartbeatTimeoutMs?: number };
  return {
    queue: config.queue ?? '',
    timeoutMs: config.timeoutMs ?? null,
    heartbeatTimeoutMs: config.heartbeatTimeoutMs ?? DEFAULT_TASK_HEARTBEAT_TIMEOUT_MS,
    retry: (node['retry'] as RetryPolicy | undefined) ?? NO_RETRY,
  };
}

export function isLiveTask(task: TaskRecord): boolean {
  return task.status === 'scheduled' || task.status === 'claimed';
}

export function liveTasks(s: StartedExecution): TaskRecord[] {
  return Object.values(s.tasks ?? {}).filter(isLiveTask);
}

function liveTaskOf(s: StartedExecution, nodeId: string): TaskRecord | undefined {
  return liveTasks(s).find((t) => t.nodeId === nodeId);
}

function tasksOfNode(s: StartedExecution, nodeId: string): number {
  return Object.values(s.tasks).filter((t) => t.nodeId === nodeId).length;
}

/**
 * Nodes whose wait ended in failure during the current try (their task failed past its retries):
 * a resume attempt counts them as failed, not to be run again (the try then fails, and the
 * workflow's retry policy decides, as for any failed node).
 */
export function failedInTry(s: StartedExecution): Record<string, ExecutionError> {
  const attempts = currentTryAttemptIds(s);
  const failed: Record<string, ExecutionError> = {};
  for (const node of Object.values(s.nodes)) {
    if (node.status === 'failed' && node.error && attempts.has(node.attemptId) && waitsOutside(s, node.nodeId))
      failed[node.nodeId] = node.error;
  }
  return failed;
}

/** Nodes whose result comes from a fact outside the running attempt: a task's end, a child execution's end, a timer, a signal. */
const OUTSIDE_NODE_TYPES = new Set(['task', 'subworkflow', 'delay', 'wait_signal']);

function waitsOutside(s: StartedExecution, nodeId: string): boolean {
  return OUTSIDE_NODE_TYPES.has(s.workflow.graph.nodes.find((n) => n.id === nodeId)?.type ?? '');
}

/** The node's wait is over in this try: its task (or child, timer, signal) succeeded, or failed past its retries. */
export function settledInTry(s: StartedExecution, nodeId: string): boolean {
  const node = s.nodes[nodeId];
  if (node?.status === 'succeeded') return true;
  return node?.status === 'failed' && currentTryAttemptIds(s).has(node.attemptId);
}

/** The attempt whose try a task's end belongs to: the current one (suspended, queued or running). */
export function tryAttemptId(s: StartedExecution, task: Pick<TaskRecord, 'attemptId'>): string {
  return currentAttempt(s)?.attemptId ?? task.attemptId;
}

/**
 * Nothing runs the graph: the current attempt suspended, or no attempt was ever scheduled (the
 * root tasks went out with the start). The end of a wait then decides what follows itself.
 */
function suspended(s: StartedExecution): boolean {
  const attempt = currentAttempt(s);
  return attempt === undefined ? unscheduledFirstAttemptId(s) !== undefined : attempt.status === 'suspended';
}

/**
 * A task node became runnable in a claimed attempt: schedule its task, once. Asking again (a
 * redelivered result, a resumed or retried attempt reaching the node while its task is still
 * live, or after it ended in this try) is no new fact.
 */
export function scheduleTask(
  s: StartedExecution,
  command: RecordNodeResult,
  requireLiveClaim: (s: StartedExecution) => void,
): ExecutionEvent[] {
  const { data, metadata } = command;
  if (liveTaskOf(s, data.nodeId) !== undefined || settledInTry(s, data.nodeId)) return [];
  requireLiveClaim(s);
  taskNode(s, data.nodeId);
  // The attempt learns of a cancel from its next heartbeat; no task is handed out meanwhile.
  if (s.cancelRequest) return [];
  return [
    firstTask(s, data.nodeId, data.attemptId, data.wait !== undefined && 'input' in data.wait ? data.wait.input : null, metadata.now),
  ];
}

/**
 * The tasks of an execution's first runnable nodes, to append with its start or admission instead
 * of attempt `attemptId`, when every one of them is a task node without an `input` expression
 * (the rule of task-successors.ts): reaching them needs no worker. They are recorded under
 * `attemptId`, which stays reserved for attempt 1 should the graph need the worker later. Null
 * when an attempt must run the graph.
 */
export function rootTasks(s: StartedExecution, attemptId: string, now: Date): ExecutionEvent[] | null {
  if (s.attempts.length > 0 || Object.keys(s.tasks).length > 0) return null;
  const step = nextStep(s);
  if (step.kind !== 'tasks') return null;
  return step.tasks.map((t) => firstTask(s, t.nodeId, attemptId, t.input, now));
}

/** The first task of a task node's run, due at once. */
function firstTask(s: StartedExecution, nodeId: string, attemptId: string, input: unknown, now: Date): ExecutionEvent {
  const config = taskNode(s, nodeId);
  const at = iso(now);
  return {
    type: 'TaskScheduled',
    data: {
      taskId: taskIdOf(s.executionId, nodeId, tasksOfNode(s, nodeId) + 1),
      nodeId,
      attemptId,
      queue: config.queue,
      input,
      taskAttempt: 1,
      timeoutMs: config.timeoutMs,
      heartbeatTimeoutMs: config.heartbeatTimeoutMs,
      notBefore: at,
      scheduledAt: at,
    },
  };
}

function taskOf(s: StartedExecution, taskId: string): TaskRecord {
  const task = s.tasks[taskId];
  if (task === undefined) throw new NotFoundError('task not found');
  return task;
}

/** Claim the task for a poller: the oldest due task of a queue goes to one poller, with a fresh fencing token. */
export function claimTask(s: StartedExecution, command: ClaimTask): ExecutionEvent[] {
  return claimFor(s, command.data, command.metadata.now);
}

function claimFor(s: StartedExecution, data: ClaimTask['data'], now: Date): ExecutionEvent[] {
  const task = taskOf(s, data.taskId);
  if (task.status !== 'scheduled') {
    const stale = new StaleAttemptError(`task is ${task.status}`, { taskId: task.taskId });
    throw task.status === 'claimed' ? stale : stale.asFinal();
  }
  if (isFinal(s)) throw new StaleAttemptError(`execution is ${s.status}`, { taskId: task.taskId }).asFinal();
  if (now.getTime() < Date.parse(task.notBefore))
    throw new StaleAttemptError('task is not due yet', { taskId: task.taskId, notBefore: task.notBefore });
  return [
    {
      type: 'TaskClaimed',
      data: {
        taskId: task.taskId,
        workerId: data.workerId,
        fencingToken: s.lastFencingToken + 1,
        leaseExpiresAt: plus(now, task.heartbeatTimeoutMs),
        timeoutAt: task.timeoutMs === null ? null : plus(now, task.timeoutMs),
        claimedAt: iso(now),
      },
    },
  ];
}

function isSameTaskClaim(task: TaskRecord, fence: TaskFence): boolean {
  return task.workerId === fence.workerId && task.fencingToken === fence.fencingToken;
}

/** When a claimed task must complete: its lease, or its timeout when that comes first. */
export function taskDeadline(task: TaskRecord): { at: string; reason: 'lease_expired' | 'timeout' } | null {
  if (task.status !== 'claimed' || task.leaseExpiresAt === null) return null;
  if (task.timeoutAt !== null && Date.parse(task.timeoutAt) <= Date.parse(task.leaseExpiresAt))
    return { at: task.timeoutAt, reason: 'timeout' };
  return { at: task.leaseExpiresAt, reason: 'lease_expired' };
}

/**
 * Only the current claim of a task may act, and only before its lease (or timeout) passed:
 * checked on every command, not left to the watchdog. Refusals of an ended task are final.
 */
function requireLiveTaskClaim(task: TaskRecord, fence: TaskFence, now: Date): void {
  if (task.status !== 'claimed' || !isSameTaskClaim(task, fence)) {
    if (task.status === 'timed_out' && isSameTaskClaim(task, fence)) {
      throw new LeaseExpiredError('lease expired', { taskId: task.taskId, leaseExpiresAt: task.leaseExpiresAt }).asFinal();
    }
    const stale = new StaleAttemptError(task.status === 'cancelled' ? 'task was cancelled' : 'not the current claim of this task', {
      taskId: task.taskId,
    });
    throw isLiveTask(task) ? stale : stale.asFinal();
  }
  const deadline = taskDeadline(task)!;
  if (now.getTime() >= Date.parse(deadline.at))
    throw new LeaseExpiredError('lease expired', { taskId: task.taskId, leaseExpiresAt: deadline.at });
}

/** The claim's poller is alive: extend its lease. A task cancelled under its claim answers with no new fact (the caller says cancel). */
export function heartbeatTask(s: StartedExecution, command: HeartbeatTask, limits: ExecutionLimits): ExecutionEvent[] {
  const { data, metadata } = command;
  const task = taskOf(s, data.taskId);
  if (task.status === 'cancelled' && isSameTaskClaim(task, data)) return [];
  requireLiveTaskClaim(task, data, metadata.now);
  requireProgressWithinLimit(data.progress, limits);
  return [
    {
      type: 'TaskLeaseExtended',
      data: {
        taskId: task.taskId,
        leaseExpiresAt: plus(metadata.now, task.heartbeatTimeoutMs),
        ...(data.progress !== undefined ? { progress: data.progress, progressKept: limits.taskProgressKept } : {}),
        at: iso(metadata.now),
      },
    },
  ];
}

/**
 * The poller reports the task's end: the node's result, or a retry by the node's policy. With
 * `claimNext`, the same worker also claims the next due tasks of this execution on the same queue
 * (`claimDueTasks`; `true` is one): one append ends one task and hands out the next.
 */
export function completeTask(s: StartedExecution, command: CompleteTask): ExecutionEvent[] {
  const { data, metadata } = command;
  const now = metadata.now;
  const task = taskOf(s, data.taskId);
  // The same completion sent again (a lost reply) is a replay.
  if (task.status === data.outcome && isSameTaskClaim(task, data)) return [];
  requireLiveTaskClaim(task, data, now);
  const ended = endTask(s, task, data, now);
  const max = data.claimNext === true ? 1 : typeof data.claimNext === 'number' ? data.claimNext : 0;
  if (max <= 0) return ended;
  return [...ended, ...claimDueTasks(foldInto(s, ended), { queue: task.queue, workerId: data.workerId, max }, now)];
}

function endTask(s: StartedExecution, task: TaskRecord, data: CompleteTask['data'], now: Date): ExecutionEvent[] {
  const at = iso(now);
  if (data.outcome === 'succeeded') {
    const output = data.output ?? null;
    const ended: ExecutionEvent[] = [
      { type: 'TaskSucceeded', data: { taskId: task.taskId, output, at } },
      { type: 'NodeSucceeded', data: { attemptId: tryAttemptId(s, task), nodeId: task.nodeId, output, at } },
    ];
    return [...ended, ...afterSuccessWhileSuspended(s, ended, data.nextAttemptId, now)];
  }
  const error: ExecutionError = data.error ?? { code: 'task_failed', message: 'task failed' };
  return [{ type: 'TaskFailed', data: { taskId: task.taskId, error, at } }, ...afterTaskEnded(s, task, error, data, now)];
}

/**
 * The claims of the oldest tasks of this execution on `queue` that are scheduled and due (in the
 * order they were scheduled), up to `max`, each exactly as a poll would claim it (its own fresh
 * fencing token, lease from now); nothing when there is none, or when the execution ended or is
 * being cancelled.
 */
function claimDueTasks(s: StartedExecution, claim: { queue: string; workerId: string; max: number }, now: Date): ExecutionEvent[] {
  const claims: ExecutionEvent[] = [];
  let state = s;
  while (claims.length < claim.max && !isFinal(state) && !state.cancelRequest) {
    const next = Object.values(state.tasks).find(
      (t) => t.status === 'scheduled' && t.queue === claim.queue && Date.parse(t.notBefore) <= now.getTime(),
    );
    if (next === undefined) break;
    const claimed = claimFor(state, { taskId: next.taskId, workerId: claim.workerId }, now);
    claims.push(...claimed);
    state = foldInto(state, claimed);
  }
  return claims;
}

/** The watchdog found a claim past its lease or timeout: the task times out, and is retried or fails its node. */
export function timeOutTask(s: StartedExecution, command: TimeOutTask): ExecutionEvent[] {
  const { data, metadata } = command;
  const now = metadata.now;
  const task = taskOf(s, data.taskId);
  const deadline = taskDeadline(task);
  if (deadline === null) throw new StaleAttemptError(`task is ${task.status}`, { taskId: task.taskId });
  // A heartbeat that won the race moved the lease: the claim stays.
  if (now.getTime() < Date.parse(deadline.at))
    throw new InvalidStateError('deadline has not passed', { taskId: task.taskId, deadline: deadline.at });
  const error: ExecutionError =
    deadline.reason === 'timeout'
      ? { code: 'task_timed_out', message: `task ${task.taskId} ran past its timeoutMs (${task.timeoutMs} ms)`, retryable: true }
      : {
          code: 'task_lease_expired',
          message: `task ${task.taskId} was not heartbeated within ${task.heartbeatTimeoutMs} ms`,
          retryable: true,
        };
  return [
    { type: 'TaskTimedOut', data: { taskId: task.taskId, reason: deadline.reason, deadline: deadline.at, at: iso(now) } },
    ...afterTaskEnded(s, task, error, data, now),
  ];
}

/** A task ended badly: the next task by the node's retry policy (after its backoff), or the node fails. */
function afterTaskEnded(
  s: StartedExecution,
  task: TaskRecord,
  error: ExecutionError,
  next: { nextAttemptId: string; jitter: number },
  now: Date,
): ExecutionEvent[] {
  const at = iso(now);
  const config = taskNode(s, task.nodeId);
  if (!s.cancelRequest && !isFinal(s) && shouldRetry(config.retry, task.taskAttempt, error)) {
    const notBefore = new Date(now.getTime() + backoffMs(config.retry, task.taskAttempt, next.jitter));
    return [
      {
        type: 'TaskScheduled',
        data: {
          taskId: taskIdOf(s.executionId, task.nodeId, tasksOfNode(s, task.nodeId) + 1),
          nodeId: task.nodeId,
          attemptId: task.attemptId,
          queue: task.queue,
          input: task.input,
          taskAttempt: task.taskAttempt + 1,
          timeoutMs: task.timeoutMs,
          heartbeatTimeoutMs: task.heartbeatTimeoutMs,
          notBefore: iso(notBefore),
          scheduledAt: at,
        },
      },
    ];
  }
  return [
    { type: 'NodeFailed', data: { attemptId: tryAttemptId(s, task), nodeId: task.nodeId, error, at } },
    ...resumeIfSuspended(s, next.nextAttemptId, now),
  ];
}

/**
 * A wait ended well (a task succeeded, an approval was granted). While an attempt runs or is
 * queued, it takes the result on (a queued one reads it when claimed; a running one suspends and
 * `suspendAttempt` decides then). While the execution is suspended, the control plane decides
 * what follows itself (task-successors.ts).
 */
export function afterSuccessWhileSuspended(s: StartedExecution, ended: ExecutionEvent[], attemptId: string, now: Date): ExecutionEvent[] {
  if (isFinal(s) || s.cancelRequest || !suspended(s)) return [];
  return stepsAfter(foldInto(s, ended), attemptId, now);
}

/** The state once the events about to be appended are recorded. */
function foldInto(s: StartedExecution, events: ExecutionEvent[]): StartedExecution {
  return events.reduce<StartedExecution>((state, event) => evolve(state, event) as StartedExecution, s);
}

/**
 * What follows a wait's end, in the same append: nothing (other waits are open), the tasks of the
 * task nodes that became runnable (their try is the suspended attempt's), the execution's end, or
 * a resume attempt (`attemptId`) that runs the graph on.
 */
function stepsAfter(s: StartedExecution, attemptId: string, now: Date): ExecutionEvent[] {
  // Waiting for a slot to resume already: that resume reads every result recorded meanwhile.
  // (Documents folded before quotas have no `awaitingSlot`.)
  if (s.awaitingSlot) return [];
  const step = nextStep(s);
  switch (step.kind) {
    case 'wait':
      return [];
    case 'tasks': {
      // A run that gave its slot back does no work without one: its resume reaches the tasks.
      if (s.slotYielded) return [resumeAttempt(s, attemptId, now)];
      const tryAttempt = currentAttempt(s)?.attemptId ?? unscheduledFirstAttemptId(s)!;
      return step.tasks.map((t) => firstTask(s, t.nodeId, tryAttempt, t.input, now));
    }
    case 'complete':
      return [{ type: 'ExecutionSucceeded', data: { output: step.output, at: iso(now) } }];
    case 'resume':
      return [resumeAttempt(s, attemptId, now)];
  }
}

/**
 * Whether the end of `nodeId`'s wait lets the graph go on: no other wait is open, or a successor
 * of the node has every predecessor final in this try.
 */
export function goesOn(s: StartedExecution, nodeId: string): boolean {
  const others = s.waits.filter((w) => w.nodeId !== nodeId && !(w.kind !== 'approval' && settledInTry(s, w.nodeId)));
  if (others.length === 0) return true;
  const tryAttempts = currentTryAttemptIds(s);
  const final = (id: string) => {
    const node = s.nodes[id];
    if (id === nodeId || node?.status === 'succeeded') return true;
    return (node?.status === 'failed' || node?.status === 'skipped') && tryAttempts.has(node.attemptId);
  };
  const { edges } = s.workflow.graph;
  return edges.some((edge) => edge.from === nodeId && edges.filter((e) => e.to === edge.to).every((e) => final(e.from)));
}

/**
 * A wait ended: if the execution is suspended, a resume attempt takes the graph on from the
 * recorded results. A running or queued attempt needs none: a queued one reads the results when
 * claimed, and a running one, unaware of them, suspends and is resumed then (`suspendAttempt`).
 */
export function resumeIfSuspended(s: StartedExecution, attemptId: string, now: Date): ExecutionEvent[] {
  if (isFinal(s) || s.cancelRequest || !suspended(s) || s.awaitingSlot) return [];
  return [resumeAttempt(s, attemptId, now)];
}

/**
 * The attempt that runs the graph on. When none was ever scheduled (the root tasks went out with
 * the start), it is attempt 1 itself, under the id the tasks' results are recorded with: the start
 * of the run's first try, which the retry policy counts.
 */
function resumeAttempt(s: StartedExecution, attemptId: string, now: Date): ExecutionEvent {
  const at = iso(now);
  // The run gave its quota slot back while it waited for its children (yield-slot.ts): it waits for one again.
  if (s.slotYielded) {
    return {
      type: 'ExecutionAwaitingSlot',
      data: { attemptId, attemptNumber: nextAttemptNumber(s), reason: 'resume', waitingFor: 'workspace_quota', at },
    };
  }
  const first = unscheduledFirstAttemptId(s);
  return {
    type: 'AttemptScheduled',
    data: {
      attemptId: first ?? attemptId,
      attemptNumber: nextAttemptNumber(s),
      reason: first === undefined ? 'resume' : 'start',
      notBefore: at,
      queueDeadline: plus(now, s.workflow.graph.timeouts.queueMs),
      scheduledAt: at,
    },
  };
}

/**
 * The attempt stopped because every runnable node waits: at most one approval (its exact action
 * recorded for the decision, its digest computed here) and any number of task nodes, whose tasks
 * it asked for while it ran. A task that ended while the attempt ran has its result recorded:
 * then what follows is decided at once, as for a task ending later (`stepsAfter`).
 */
export function suspendAttempt(
  s: StartedExecution,
  command: CompleteAttempt,
  awaitApproval: (approval: { nodeId: string; action: unknown }) => ExecutionEvent,
  /** The attempt's `delay` and `wait_signal` nodes, checked (durable-waits.ts). */
  durable: { waits: Wait[]; settled: boolean } = { waits: [], settled: false },
): ExecutionEvent[] {
  const { data, metadata } = command;
  const at = iso(metadata.now);
  const approval = data.approval;
  const taskNodes = [...new Set(data.tasks ?? [])];
  if (!approval && taskNodes.length === 0 && durable.waits.length === 0)
    throw new InvalidStateError('a suspended attempt must name what it waits for');
  if (approval) {
    const node = s.workflow.graph.nodes.find((n) => n.id === approval.nodeId);
    if (!node || node.type !== 'approval') throw new InvalidStateError(`node ${approval.nodeId} is not an approval node`);
  }
  const kinds = new Map<string, 'task' | 'subworkflow'>();
  for (const nodeId of taskNodes) {
    // The list names task nodes and subworkflow nodes alike: each waits for its task, or its child.
    const child = isSubworkflowNode(s, nodeId);
    if (!child) taskNode(s, nodeId);
    kinds.set(nodeId, child ? 'subworkflow' : 'task');
    const live = child ? liveChildOf(s, nodeId) !== undefined : liveTaskOf(s, nodeId) !== undefined;
    if (!live && !settledInTry(s, nodeId) && !s.cancelRequest) {
      throw new InvalidStateError(`${child ? 'subworkflow' : 'task'} node ${nodeId} has no ${child ? 'child execution' : 'task'}`);
    }
  }
  if (s.cancelRequest) {
    return [
      { type: 'AttemptCancelled', data: { attemptId: data.attemptId, at } },
      { type: 'ExecutionCancelled', data: { reason: s.cancelRequest.reason, at } },
    ];
  }
  const waits: Wait[] = [
    ...(approval ? [{ nodeId: approval.nodeId, kind: 'approval' as const }] : []),
    ...taskNodes.map((nodeId) => ({ nodeId, kind: kinds.get(nodeId)! })),
    ...durable.waits,
  ];
  const settled = durable.settled || taskNodes.some((nodeId) => settledInTry(s, nodeId));
  const suspension: ExecutionEvent[] = [
    ...(approval ? [awaitApproval(approval)] : []),
    { type: 'AttemptSuspended', data: { attemptId: data.attemptId, waits, at } },
  ];
  if (!settled) return suspension;
  // Deciding once the suspension is folded in: a resume's number counts the suspended attempt already.
  const suspended = foldInto(s, suspension);
  return [...suspension, ...stepsAfter(suspended, data.nextAttemptId, metadata.now)];
}

const ENDINGS = new Set(['ExecutionSucceeded', 'ExecutionFailed', 'ExecutionTimedOut', 'ExecutionCancelled']);

/**
 * A cancel request, or the end of the execution, ends every live task with it (`TaskCancelled`,
 * right after the request or just before the end): a waiting task is no longer handed out, and
 * the heartbeat of a claimed one answers `cancelRequested`.
 */
export function withTasksCancelled(s: StartedExecution, events: ExecutionEvent[], now: Date): ExecutionEvent[] {
  if (liveTasks(s).length === 0) return events;
  const index = events.findIndex((e) => e.type === 'CancelRequested' || ENDINGS.has(e.type));
  if (index === -1) return events;
  // Live as the append leaves them: a task whose end this very append records (and ends the execution with) is over.
  const live = liveTasks(foldInto(s, events.slice(0, index)));
  if (live.length === 0) return events;
  const at = iso(now);
  const cancelled: ExecutionEvent[] = live.map((t) => ({ type: 'TaskCancelled', data: { taskId: t.taskId, at } }));
  const position = events[index].type === 'CancelRequested' ? index + 1 : index;
  return [...events.slice(0, position), ...cancelled, ...events.slice(position)];
}
