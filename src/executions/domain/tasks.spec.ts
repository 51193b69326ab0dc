import { describe, expect, it } from '@jest/globals';
import { InvalidStateError, LeaseExpiredError, NotFoundError, StaleAttemptError } from '../../core/errors.js';
import { workerActor, systemActor } from '../../core/actors.js';
import { fold } from '../../core/decider.js';
import type { ClaimTask, CompleteTask, HeartbeatTask, RecordNodeResult, TimeOutTask } from './execution.commands.js';
import type { ExecutionEvent, WorkflowSnapshot } from './execution.events.js';
import { executionDecider } from './execution.decider.js';
import { failedInTry, parseTaskId, taskIdOf } from './tasks.js';
import { actionDigestOf } from './decide-approval.js';
import {
  ATTEMPT_1,
  ATTEMPT_2,
  ATTEMPT_3,
  EXECUTION_ID,
  OPERATOR,
  WORKER_A,
  aWorkflow,
  attemptClaimed,
  attemptScheduled,
  completeAttempt,
  executionStarted,
  given,
  iso,
  requestCancel,
  time,
} from '../../../test/support/executions/execution-fixtures.js';

/** extract → charge (a task on `billing`, 3 tries, 1 s backoff doubling) → load; and a sign-off approval beside. */
function withTask(config: Record<string, unknown> = {}): WorkflowSnapshot {
  const base = aWorkflow();
  return {
    ...base,
    graph: {
      ...base.graph,
      nodes: [
        { id: 'extract', type: 'noop' },
        {
          id: 'charge',
          type: 'task',
          config: { queue: 'billing', heartbeatTimeoutMs: 10_000, ...config },
          retry: {
            maxAttempts: 3,
            initialIntervalMs: 1_000,
            backoffCoefficient: 2,
            maxIntervalMs: 60_000,
            nonRetryable: ['card_declined'],
          },
        },
        { id: 'load', type: 'noop' },
        { id: 'sign-off', type: 'approval' },
      ],
      edges: [
        { from: 'extract', to: 'charge' },
        { from: 'charge', to: 'load' },
        { from: 'extract', to: 'sign-off' },
      ],
    },
  };
}

const TASK_1 = taskIdOf(EXECUTION_ID, 'charge', 1);
const TASK_2 = taskIdOf(EXECUTION_ID, 'charge', 2);
const POLLER = 'billing-7';
const INPUT = { amount: 42 };

const running = (config?: Record<string, unknown>): ExecutionEvent[] => [
  executionStarted({ workflow: withTask(config) }),
  attemptScheduled({ at: 0 }),
  attemptClaimed({ at: 1_000 }),
];

function nodeWaiting(o: { at: number; attemptId?: string; fencingToken?: number }): RecordNodeResult {
  return {
    type: 'RecordNodeResult',
    data: {
      attemptId: o.attemptId ?? ATTEMPT_1,
      workerId: WORKER_A,
      fencingToken: o.fencingToken ?? 1,
      kind: 'node_waiting',
      nodeId: 'charge',
      wait: { kind: 'task', input: INPUT },
    },
    metadata: { now: time(o.at), actor: workerActor(WORKER_A) },
  };
}

function taskScheduled(o: {
  at: number;
  taskId?: string;
  taskAttempt?: number;
  notBefore?: number;
  timeoutMs?: number | null;
}): ExecutionEvent {
  return {
    type: 'TaskScheduled',
    data: {
      taskId: o.taskId ?? TASK_1,
      nodeId: 'charge',
      attemptId: ATTEMPT_1,
      queue: 'billing',
      input: INPUT,
      taskAttempt: o.taskAttempt ?? 1,
      timeoutMs: o.timeoutMs ?? null,
      heartbeatTimeoutMs: 10_000,
      notBefore: iso(o.notBefore ?? o.at),
      scheduledAt: iso(o.at),
    },
  };
}

function taskClaimed(o: { at: number; taskId?: string; fencingToken?: number; timeoutAt?: number }): ExecutionEvent {
  return {
    type: 'TaskClaimed',
    data: {
      taskId: o.taskId ?? TASK_1,
      workerId: POLLER,
      fencingToken: o.fencingToken ?? 2,
      leaseExpiresAt: iso(o.at + 10_000),
      timeoutAt: o.timeoutAt === undefined ? null : iso(o.timeoutAt),
      claimedAt: iso(o.at),
    },
  };
}

const suspendedAtTask = (at = 3_000): ExecutionEvent => ({
  type: 'AttemptSuspended',
  data: { attemptId: ATTEMPT_1, waits: [{ nodeId: 'charge', kind: 'task' }], at: iso(at) },
});

/** The attempt asked for the task and suspended: no attempt is in flight, the execution waits. */
const waiting = (): ExecutionEvent[] => [...running(), taskScheduled({ at: 2_000 }), suspendedAtTask()];
const claimed = (): ExecutionEvent[] => [...waiting(), taskClaimed({ at: 4_000 })];

const claimTask = (o: { at: number; taskId?: string; workerId?: string }): ClaimTask => ({
  type: 'ClaimTask',
  data: { taskId: o.taskId ?? TASK_1, workerId: o.workerId ?? POLLER },
  metadata: { now: time(o.at), actor: workerActor(o.workerId ?? POLLER) },
});

const heartbeatTask = (o: { at: number; fencingToken?: number; workerId?: string; progress?: unknown }): HeartbeatTask => ({
  type: 'HeartbeatTask',
  data: {
    taskId: TASK_1,
    workerId: o.workerId ?? POLLER,
    fencingToken: o.fencingToken ?? 2,
    ...(o.progress !== undefined ? { progress: o.progress } : {}),
  },
  metadata: { now: time(o.at), actor: workerActor(POLLER) },
});

function completeTask(o: {
  at: number;
  outcome: 'succeeded' | 'failed';
  taskId?: string;
  fencingToken?: number;
  workerId?: string;
  output?: unknown;
  error?: { code: string; message: string; retryable?: boolean };
}): CompleteTask {
  return {
    type: 'CompleteTask',
    data: {
      taskId: o.taskId ?? TASK_1,
      workerId: o.workerId ?? POLLER,
      fencingToken: o.fencingToken ?? 2,
      outcome: o.outcome,
      ...(o.output !== undefined ? { output: o.output } : {}),
      ...(o.error !== undefined ? { error: o.error } : {}),
      nextAttemptId: ATTEMPT_2,
      jitter: 0,
    },
    metadata: { now: time(o.at), actor: workerActor(POLLER) },
  };
}

const timeOutTask = (o: { at: number; taskId?: string }): TimeOutTask => ({
  type: 'TimeOutTask',
  data: { taskId: o.taskId ?? TASK_1, nextAttemptId: ATTEMPT_2, jitter: 0 },
  metadata: { now: time(o.at), actor: systemActor('watchdog') },
});

const resumeScheduled = (at: number, attemptId = ATTEMPT_2, attemptNumber = 2): ExecutionEvent =>
  attemptScheduled({ attemptId, attemptNumber, reason: 'resume', at });

describe('task ids', () => {
  it('name the execution, the node and the task number, and split back', () => {
    expect(parseTaskId(TASK_1)).toEqual({ executionId: EXECUTION_ID, nodeId: 'charge', seq: 1 });
    expect(parseTaskId('not-a-task')).toBeNull();
    expect(parseTaskId(`${EXECUTION_ID}.charge.0`)).toBeNull();
  });
});

describe('task nodes', () => {
  describe('scheduling', () => {
    it('schedules the task a claimed attempt asks for, with the node’s queue and lease', () => {
      given(running())
        .when(nodeWaiting({ at: 2_000 }))
        .then([taskScheduled({ at: 2_000 })]);
    });

    it('carries the node’s timeout', () => {
      given(running({ timeoutMs: 60_000 }))
        .when(nodeWaiting({ at: 2_000 }))
        .then([taskScheduled({ at: 2_000, timeoutMs: 60_000 })]);
    });

    it('never schedules a second task while one is live: a redelivered or resumed request is no new fact', () => {
      given([...running(), taskScheduled({ at: 2_000 })])
        .when(nodeWaiting({ at: 2_500 }))
        .thenNothingHappens();
      given([...claimed(), resumeScheduled(5_000), attemptClaimed({ attemptId: ATTEMPT_2, fencingToken: 3, at: 5_500 })])
        .when(nodeWaiting({ at: 6_000, attemptId: ATTEMPT_2, fencingToken: 3 }))
        .thenNothingHappens();
    });

    it('refuses a request of a claim that is not current', () => {
      given(running())
        .when(nodeWaiting({ at: 2_000, fencingToken: 9 }))
        .thenThrows(StaleAttemptError);
    });

    it('refuses a task for a node that is not a task node', () => {
      const command = nodeWaiting({ at: 2_000 });
      given(running())
        .when({ ...command, data: { ...command.data, nodeId: 'load' } })
        .thenThrows(InvalidStateError);
    });
  });

  describe('suspension: a waiting step is a fact, not a process', () => {
    it('suspends the attempt with the list of waits; nothing holds a lease and the execution is waiting', () => {
      const command = completeAttempt({ at: 3_000, outcome: 'suspended' });
      given([...running(), taskScheduled({ at: 2_000 })])
        .when({ ...command, data: { ...command.data, tasks: ['charge'] } })
        .then([suspendedAtTask()]);
      const state = fold(executionDecider, waiting());
      expect(state).toMatchObject({ status: 'waiting', waits: [{ nodeId: 'charge', kind: 'task' }] });
      expect(state.status !== 'not_started' && state.attempts.map((a) => a.status)).toEqual(['suspended']);
    });

    it('waits for an approval and a task at once, and shows the approval as what a person must do', () => {
      const command = completeAttempt({ at: 3_000, outcome: 'suspended' });
      const action = { amount: 42 };
      const events = [
        {
          type: 'NodeAwaitingApproval' as const,
          data: { attemptId: ATTEMPT_1, nodeId: 'sign-off', action, actionDigest: actionDigestOf(action), at: iso(3_000) },
        },
        {
          type: 'AttemptSuspended' as const,
          data: {
            attemptId: ATTEMPT_1,
            waits: [
              { nodeId: 'sign-off', kind: 'approval' as const },
              { nodeId: 'charge', kind: 'task' as const },
            ],
            at: iso(3_000),
          },
        },
      ];
      given([...running(), taskScheduled({ at: 2_000 })])
        .when({ ...command, data: { ...command.data, approval: { nodeId: 'sign-off', action }, tasks: ['charge'] } })
        .then(events);
      expect(fold(executionDecider, [...running(), taskScheduled({ at: 2_000 }), ...events]).status).toBe('awaiting_approval');
    });

    it('a task that ended while the attempt ran resumes the suspended attempt at once', () => {
      const command = completeAttempt({ at: 6_000, outcome: 'suspended' });
      given([
        ...running(),
        taskScheduled({ at: 2_000 }),
        taskClaimed({ at: 3_000 }),
        { type: 'TaskSucceeded', data: { taskId: TASK_1, output: 'ok', at: iso(4_000) } },
        { type: 'NodeSucceeded', data: { attemptId: ATTEMPT_1, nodeId: 'charge', output: 'ok', at: iso(4_000) } },
      ])
        .when({ ...command, data: { ...command.data, tasks: ['charge'] } })
        .then([
          { type: 'AttemptSuspended', data: { attemptId: ATTEMPT_1, waits: [{ nodeId: 'charge', kind: 'task' }], at: iso(6_000) } },
          resumeScheduled(6_000),
        ]);
    });

    it('refuses a suspension at a task node that has no task', () => {
      const command = completeAttempt({ at: 3_000, outcome: 'suspended' });
      given(running())
        .when({ ...command, data: { ...command.data, tasks: ['charge'] } })
        .thenThrows(InvalidStateError);
    });

    it('after an approval, the resume attempt finds the task still live and the execution waits again', () => {
      const action = { amount: 42 };
      const digest = actionDigestOf(action);
      const history: ExecutionEvent[] = [
        ...running(),
        taskScheduled({ at: 2_000 }),
        { type: 'NodeAwaitingApproval', data: { attemptId: ATTEMPT_1, nodeId: 'sign-off', action, actionDigest: digest, at: iso(3_000) } },
        {
          type: 'AttemptSuspended',
          data: {
            attemptId: ATTEMPT_1,
            waits: [
              { nodeId: 'sign-off', kind: 'approval' },
              { nodeId: 'charge', kind: 'task' },
            ],
            at: iso(3_000),
          },
        },
        { type: 'ApprovalGranted', data: { nodeId: 'sign-off', actionDigest: digest, decidedBy: OPERATOR, comment: null, at: iso(4_000) } },
        resumeScheduled(4_000),
        attemptClaimed({ attemptId: ATTEMPT_2, fencingToken: 2, at: 4_500 }),
      ];
      given(history)
        .when(nodeWaiting({ at: 5_000, attemptId: ATTEMPT_2, fencingToken: 2 }))
        .thenNothingHappens();
      const command = completeAttempt({ attemptId: ATTEMPT_2, fencingToken: 2, at: 5_000, outcome: 'suspended', nextAttemptId: ATTEMPT_3 });
      given(history)
        .when({ ...command, data: { ...command.data, tasks: ['charge'] } })
        .then([{ type: 'AttemptSuspended', data: { attemptId: ATTEMPT_2, waits: [{ nodeId: 'charge', kind: 'task' }], at: iso(5_000) } }]);
    });
  });

  describe('claiming', () => {
    it('hands the task to one poller with a fresh fencing token and the node’s lease', () => {
      given(waiting())
        .when(claimTask({ at: 4_000 }))
        .then([taskClaimed({ at: 4_000 })]);
    });

    it('bounds the claim by the node’s timeout', () => {
      given([...running({ timeoutMs: 60_000 }), taskScheduled({ at: 2_000, timeoutMs: 60_000 }), suspendedAtTask()])
        .when(claimTask({ at: 4_000 }))
        .then([taskClaimed({ at: 4_000, timeoutAt: 64_000 })]);
    });

    it('refuses a second poller: the task is claimed', () => {
      given(claimed())
        .when(claimTask({ at: 4_500, workerId: 'billing-8' }))
        .thenThrows(StaleAttemptError);
    });

    it('does not hand out a retry before its backoff', () => {
      given([
        ...claimed(),
        { type: 'TaskFailed', data: { taskId: TASK_1, error: { code: 'busy', message: '' }, at: iso(5_000) } },
        taskScheduled({ at: 5_000, taskId: TASK_2, taskAttempt: 2, notBefore: 6_000 }),
      ])
        .when(claimTask({ at: 5_500, taskId: TASK_2 }))
        .thenThrows(StaleAttemptError, (error) => expect(error.details).toMatchObject({ notBefore: iso(6_000) }));
    });

    it('answers not found for a task the execution never had', () => {
      given(waiting())
        .when(claimTask({ at: 4_000, taskId: TASK_2 }))
        .thenThrows(NotFoundError);
    });
  });

  describe('heartbeats', () => {
    it('extend the lease of the current claim and record the progress', () => {
      given(claimed())
        .when(heartbeatTask({ at: 7_000, progress: { done: 0.5 } }))
        .then([
          {
            type: 'TaskLeaseExtended',
            data: { taskId: TASK_1, leaseExpiresAt: iso(17_000), progress: { done: 0.5 }, progressKept: 10, at: iso(7_000) },
          },
        ]);
    });

    it('refuse another fencing token (stale) and a lease already run out (lease_expired)', () => {
      given(claimed())
        .when(heartbeatTask({ at: 7_000, fencingToken: 1 }))
        .thenThrows(StaleAttemptError);
      given(claimed())
        .when(heartbeatTask({ at: 14_000 }))
        .thenThrows(LeaseExpiredError);
    });

    it('of a task cancelled with its execution change nothing (the reply says cancel)', () => {
      given([...claimed(), ...cancelEvents(8_000)])
        .when(heartbeatTask({ at: 9_000 }))
        .thenNothingHappens();
    });
  });

  describe('completion', () => {
    it('records the task’s output as the node’s and resumes the suspended execution', () => {
      given(claimed())
        .when(completeTask({ at: 8_000, outcome: 'succeeded', output: { charged: 42 } }))
        .then([
          { type: 'TaskSucceeded', data: { taskId: TASK_1, output: { charged: 42 }, at: iso(8_000) } },
          { type: 'NodeSucceeded', data: { attemptId: ATTEMPT_1, nodeId: 'charge', output: { charged: 42 }, at: iso(8_000) } },
          resumeScheduled(8_000),
        ]);
    });

    it('schedules no resume while the others the attempt waits for are live and nothing new can run', () => {
      const twoTasks: WorkflowSnapshot = {
        ...withTask(),
        graph: {
          ...withTask().graph,
          nodes: [...withTask().graph.nodes, { id: 'refund', type: 'task', config: { queue: 'billing' } }],
          edges: [...withTask().graph.edges, { from: 'extract', to: 'refund' }, { from: 'refund', to: 'load' }],
        },
      };
      const refundTask = taskIdOf(EXECUTION_ID, 'refund', 1);
      const history: ExecutionEvent[] = [
        executionStarted({ workflow: twoTasks }),
        attemptScheduled({ at: 0 }),
        attemptClaimed({ at: 1_000 }),
        { type: 'NodeSucceeded', data: { attemptId: ATTEMPT_1, nodeId: 'extract', output: null, at: iso(1_500) } },
        taskScheduled({ at: 2_000 }),
        {
          ...taskScheduled({ at: 2_000, taskId: refundTask }),
          data: { ...taskScheduled({ at: 2_000, taskId: refundTask }).data, nodeId: 'refund' },
        } as ExecutionEvent,
        {
          type: 'NodeAwaitingApproval',
          data: { attemptId: ATTEMPT_1, nodeId: 'sign-off', action: null, actionDigest: actionDigestOf(null), at: iso(3_000) },
        },
        {
          type: 'AttemptSuspended',
          data: {
            attemptId: ATTEMPT_1,
            waits: [
              { nodeId: 'sign-off', kind: 'approval' },
              { nodeId: 'charge', kind: 'task' },
              { nodeId: 'refund', kind: 'task' },
            ],
            at: iso(3_000),
          },
        },
        taskClaimed({ at: 4_000 }),
        taskClaimed({ at: 4_000, taskId: refundTask, fencingToken: 3 }),
      ];
      // `load` still waits for `refund`: no resume yet.
      given(history)
        .when(completeTask({ at: 5_000, outcome: 'succeeded', output: 1 }))
        .then([
          { type: 'TaskSucceeded', data: { taskId: TASK_1, output: 1, at: iso(5_000) } },
          { type: 'NodeSucceeded', data: { attemptId: ATTEMPT_1, nodeId: 'charge', output: 1, at: iso(5_000) } },
        ]);
      // The last one resumes.
      given([
        ...history,
        { type: 'TaskSucceeded', data: { taskId: TASK_1, output: 1, at: iso(5_000) } },
        { type: 'NodeSucceeded', data: { attemptId: ATTEMPT_1, nodeId: 'charge', output: 1, at: iso(5_000) } },
      ])
        .when(completeTask({ at: 6_000, outcome: 'succeeded', output: 2, taskId: refundTask, fencingToken: 3 }))
        .then([
          { type: 'TaskSucceeded', data: { taskId: refundTask, output: 2, at: iso(6_000) } },
          { type: 'NodeSucceeded', data: { attemptId: ATTEMPT_1, nodeId: 'refund', output: 2, at: iso(6_000) } },
          resumeScheduled(6_000),
        ]);
    });

    it('schedules no resume while an attempt is running: it will suspend and be resumed then', () => {
      given([...running(), taskScheduled({ at: 2_000 }), taskClaimed({ at: 3_000 })])
        .when(completeTask({ at: 4_000, outcome: 'succeeded', output: 1 }))
        .then([
          { type: 'TaskSucceeded', data: { taskId: TASK_1, output: 1, at: iso(4_000) } },
          { type: 'NodeSucceeded', data: { attemptId: ATTEMPT_1, nodeId: 'charge', output: 1, at: iso(4_000) } },
        ]);
    });

    it('treats the same completion sent again as a replay', () => {
      given([...claimed(), ...succeededAt(8_000)])
        .when(completeTask({ at: 8_500, outcome: 'succeeded', output: { charged: 42 } }))
        .thenNothingHappens();
    });

    // Backoff with jitter 0 is half the interval: 500 ms after a first failure of 1 s initialIntervalMs.
    it('retries a failed task by the node’s policy, with its backoff in notBefore', () => {
      given(claimed())
        .when(completeTask({ at: 8_000, outcome: 'failed', error: { code: 'busy', message: 'try later' } }))
        .then([
          { type: 'TaskFailed', data: { taskId: TASK_1, error: { code: 'busy', message: 'try later' }, at: iso(8_000) } },
          taskScheduled({ at: 8_000, taskId: TASK_2, taskAttempt: 2, notBefore: 8_500 }),
        ]);
    });

    it('fails the node when the error may not be retried, and the resume attempt counts it as failed', () => {
      const error = { code: 'card_declined', message: 'no' };
      const events: ExecutionEvent[] = [
        { type: 'TaskFailed', data: { taskId: TASK_1, error, at: iso(8_000) } },
        { type: 'NodeFailed', data: { attemptId: ATTEMPT_1, nodeId: 'charge', error, at: iso(8_000) } },
        resumeScheduled(8_000),
      ];
      given(claimed())
        .when(completeTask({ at: 8_000, outcome: 'failed', error }))
        .then(events);
      const state = fold(executionDecider, [...claimed(), ...events]);
      expect(state.status !== 'not_started' && failedInTry(state)).toEqual({ charge: error });
    });

    it('refuses a late completion of a superseded claim (stale) and of one whose lease ran out (lease_expired), recording nothing', () => {
      given(claimed())
        .when(completeTask({ at: 8_000, outcome: 'succeeded', fencingToken: 1 }))
        .thenThrows(StaleAttemptError);
      given(claimed())
        .when(completeTask({ at: 14_000, outcome: 'succeeded' }))
        .thenThrows(LeaseExpiredError);
      given([...claimed(), ...leaseExpiredAt(14_500)])
        .when(completeTask({ at: 15_000, outcome: 'succeeded' }))
        .thenThrows(LeaseExpiredError);
      given([...claimed(), ...leaseExpiredAt(14_500), taskClaimed({ at: 16_000, taskId: TASK_2, fencingToken: 3 })])
        .when(completeTask({ at: 16_500, outcome: 'succeeded', taskId: TASK_2, fencingToken: 2 }))
        .thenThrows(StaleAttemptError);
    });
  });

  describe('lease expiry and timeout (the watchdog)', () => {
    it('times out a claim whose lease ran out and retries it after the backoff', () => {
      given(claimed())
        .when(timeOutTask({ at: 14_500 }))
        .then(leaseExpiredAt(14_500));
    });

    it('refuses while a heartbeat kept the lease alive', () => {
      given([...claimed(), { type: 'TaskLeaseExtended', data: { taskId: TASK_1, leaseExpiresAt: iso(20_000), at: iso(10_000) } }])
        .when(timeOutTask({ at: 14_500 }))
        .thenThrows(InvalidStateError, (error) => expect(error.details).toMatchObject({ deadline: iso(20_000) }));
    });

    it('times out a claim past its timeoutMs whatever its heartbeats', () => {
      given([
        ...running({ timeoutMs: 5_000 }),
        taskScheduled({ at: 2_000, timeoutMs: 5_000 }),
        suspendedAtTask(),
        taskClaimed({ at: 4_000, timeoutAt: 9_000 }),
        { type: 'TaskLeaseExtended', data: { taskId: TASK_1, leaseExpiresAt: iso(18_000), at: iso(8_000) } },
      ])
        .when(timeOutTask({ at: 9_000 }))
        .then([
          { type: 'TaskTimedOut', data: { taskId: TASK_1, reason: 'timeout', deadline: iso(9_000), at: iso(9_000) } },
          taskScheduled({ at: 9_000, taskId: TASK_2, taskAttempt: 2, notBefore: 9_500, timeoutMs: 5_000 }),
        ]);
    });

    it('fails the node once the policy has no try left, and resumes', () => {
      const task3 = taskIdOf(EXECUTION_ID, 'charge', 3);
      const error = { code: 'task_lease_expired', message: `task ${task3} was not heartbeated within 10000 ms`, retryable: true };
      given([
        ...claimed(),
        ...leaseExpiredAt(14_500),
        taskClaimed({ at: 16_000, taskId: TASK_2, fencingToken: 3 }),
        { type: 'TaskTimedOut', data: { taskId: TASK_2, reason: 'lease_expired', deadline: iso(26_000), at: iso(26_000) } },
        taskScheduled({ at: 26_000, taskId: task3, taskAttempt: 3, notBefore: 28_000 }),
        taskClaimed({ at: 28_000, taskId: task3, fencingToken: 4 }),
      ])
        .when(timeOutTask({ at: 38_000, taskId: task3 }))
        .then([
          { type: 'TaskTimedOut', data: { taskId: task3, reason: 'lease_expired', deadline: iso(38_000), at: iso(38_000) } },
          { type: 'NodeFailed', data: { attemptId: ATTEMPT_1, nodeId: 'charge', error, at: iso(38_000) } },
          resumeScheduled(38_000),
        ]);
    });
  });

  describe('cancel', () => {
    it('cancels the waiting execution and its live task in one append', () => {
      given(claimed())
        .when(requestCancel({ at: 8_000, reason: null }))
        .then(cancelEvents(8_000));
    });

    it('refuses the completion of a cancelled task', () => {
      given([...claimed(), ...cancelEvents(8_000)])
        .when(completeTask({ at: 9_000, outcome: 'succeeded' }))
        .thenThrows(StaleAttemptError);
    });

    it('cancels live tasks while an attempt runs; the attempt learns it from its heartbeat', () => {
      given([...running(), taskScheduled({ at: 2_000 })])
        .when(requestCancel({ at: 3_000, reason: null }))
        .then([
          { type: 'CancelRequested', data: { reason: null, requestedBy: OPERATOR, at: iso(3_000) } },
          { type: 'TaskCancelled', data: { taskId: TASK_1, at: iso(3_000) } },
        ]);
    });
  });
});

function succeededAt(at: number): ExecutionEvent[] {
  return [
    { type: 'TaskSucceeded', data: { taskId: TASK_1, output: { charged: 42 }, at: iso(at) } },
    { type: 'NodeSucceeded', data: { attemptId: ATTEMPT_1, nodeId: 'charge', output: { charged: 42 }, at: iso(at) } },
    resumeScheduled(at),
  ];
}

function leaseExpiredAt(at: number): ExecutionEvent[] {
  return [
    { type: 'TaskTimedOut', data: { taskId: TASK_1, reason: 'lease_expired', deadline: iso(14_000), at: iso(at) } },
    taskScheduled({ at, taskId: TASK_2, taskAttempt: 2, notBefore: at + 500 }),
  ];
}

function cancelEvents(at: number): ExecutionEvent[] {
  return [
    { type: 'CancelRequested', data: { reason: null, requestedBy: OPERATOR, at: iso(at) } },
    { type: 'TaskCancelled', data: { taskId: TASK_1, at: iso(at) } },
    { type: 'ExecutionCancelled', data: { reason: null, at: iso(at) } },
  ];
}
