import { describe, expect, it } from '@jest/globals';
import { workerActor } from '../../core/actors.js';
import { decideAll } from '../../core/command-handler.js';
import { fold } from '../../core/decider.js';
import { StaleAttemptError } from '../../core/errors.js';
import type { CompleteTask, ExecutionCommand } from './execution.commands.js';
import type { ExecutionEvent, WorkflowSnapshot } from './execution.events.js';
import { executionDecider } from './execution.decider.js';
import { taskIdOf } from './tasks.js';
import { actionDigestOf } from './decide-approval.js';
import {
  ATTEMPT_1,
  ATTEMPT_2,
  EXECUTION_ID,
  OPERATOR,
  aWorkflow,
  admitExecution,
  attemptClaimed,
  attemptScheduled,
  claimAttempt,
  completeAttempt,
  executionAwaitingSlot,
  executionStarted,
  given,
  iso,
  requestCancel,
  startExecution,
  time,
  timeOutExecution,
} from '../../../test/support/executions/execution-fixtures.js';

/**
 * The control plane decides what follows a task's end while the execution is suspended
 * (task-successors.ts): the next tasks, the execution's end, or a resume attempt.
 */

const INPUT = { day: '2029-12-31' };
const POLLER = 'poller-1';
const RETRY_TWICE = { maxAttempts: 2, initialIntervalMs: 1_000, backoffCoefficient: 2, maxIntervalMs: 60_000, nonRetryable: [] };

type Node = { id: string; type: string; trigger?: string; config?: Record<string, unknown> };
const task = (id: string, extra: Partial<Node> = {}): Node => ({ id, type: 'task', config: { queue: 'q', ...extra.config }, ...extra });

function graphOf(nodes: Node[], edges: [string, string][]): WorkflowSnapshot {
  const base = aWorkflow();
  return {
    ...base,
    graph: {
      ...base.graph,
      nodes: nodes.map((n) => (n.type === 'task' ? { retry: RETRY_TWICE, ...n } : n)),
      edges: edges.map(([from, to]) => ({ from, to })),
    },
  };
}

const EDGES: [string, string][] = [
  ['a', 'b'],
  ['a', 'c'],
  ['b', 'd'],
  ['c', 'd'],
];
/** a → b, c → d, all task nodes. */
const DIAMOND = graphOf(
  ['a', 'b', 'c', 'd'].map((id) => task(id)),
  EDGES,
);

const taskId = (nodeId: string, seq = 1) => taskIdOf(EXECUTION_ID, nodeId, seq);

function scheduled(
  nodeId: string,
  at: number,
  input: unknown,
  o: { seq?: number; taskAttempt?: number; notBefore?: number; queue?: string } = {},
): ExecutionEvent {
  return {
    type: 'TaskScheduled',
    data: {
      taskId: taskId(nodeId, o.seq),
      nodeId,
      attemptId: ATTEMPT_1,
      queue: o.queue ?? 'q',
      input,
      taskAttempt: o.taskAttempt ?? 1,
      timeoutMs: null,
      heartbeatTimeoutMs: 30_000,
      notBefore: iso(o.notBefore ?? at),
      scheduledAt: iso(at),
    },
  };
}

const claimTask = (nodeId: string, at: number, seq = 1): ExecutionCommand => ({
  type: 'ClaimTask',
  data: { taskId: taskId(nodeId, seq), workerId: POLLER },
  metadata: { now: time(at), actor: workerActor(POLLER) },
});

function completeTask(
  nodeId: string,
  at: number,
  o: { output?: unknown; error?: { code: string; message: string }; seq?: number },
): CompleteTask {
  return {
    type: 'CompleteTask',
    data: {
      taskId: taskId(nodeId, o.seq),
      workerId: POLLER,
      fencingToken: 0, // the recorded claim's, set by `fenced`
      outcome: o.error === undefined ? 'succeeded' : 'failed',
      ...(o.output !== undefined ? { output: o.output } : {}),
      ...(o.error !== undefined ? { error: o.error } : {}),
      nextAttemptId: ATTEMPT_2,
      jitter: 0,
    },
    metadata: { now: time(at), actor: workerActor(POLLER) },
  };
}

/** The completion as the current claim of its task sends it. */
function fenced(history: ExecutionEvent[], command: CompleteTask): CompleteTask {
  const state = fold(executionDecider, history);
  const token = state.status === 'not_started' ? 0 : (state.tasks[command.data.taskId].fencingToken ?? 0);
  return { ...command, data: { ...command.data, fencingToken: token } };
}

/** Decides each command on the history so far and appends what it decided, as the command handler does. */
function play(history: ExecutionEvent[], commands: ExecutionCommand[]): ExecutionEvent[] {
  const events = [...history];
  for (const command of commands) {
    const next = command.type === 'CompleteTask' ? fenced(events, command) : command;
    events.push(...executionDecider.decide(next, fold(executionDecider, events)));
  }
  return events;
}

const claimedAndDone = (nodeId: string, at: number, output: unknown) => [claimTask(nodeId, at), completeTask(nodeId, at + 100, { output })];

/** The first attempt ran the graph up to `a`, asked for its task and suspended. */
function suspendedAtA(workflow: WorkflowSnapshot): ExecutionEvent[] {
  return [
    executionStarted({ workflow }),
    attemptScheduled({ at: 0 }),
    attemptClaimed({ at: 1_000 }),
    scheduled('a', 2_000, { input: INPUT, nodes: {} }),
    { type: 'AttemptSuspended', data: { attemptId: ATTEMPT_1, waits: [{ nodeId: 'a', kind: 'task' }], at: iso(3_000) } },
  ];
}

const succeeded = (nodeId: string, at: number, output: unknown): ExecutionEvent[] => [
  { type: 'TaskSucceeded', data: { taskId: taskId(nodeId), output, at: iso(at) } },
  { type: 'NodeSucceeded', data: { attemptId: ATTEMPT_1, nodeId, output, at: iso(at) } },
];

const resumeAt = (at: number): ExecutionEvent => attemptScheduled({ attemptId: ATTEMPT_2, attemptNumber: 2, reason: 'resume', at });
const attemptsScheduled = (events: ExecutionEvent[]) => events.filter((e) => e.type === 'AttemptScheduled').length;

describe('successors decided by the control plane', () => {
  describe('a diamond of task nodes (a → b, c → d)', () => {
    const afterA = play(suspendedAtA(DIAMOND), [claimTask('a', 4_000)]);

    it('schedules the tasks of b and c when a succeeds, with their node input, and no attempt', () => {
      given(afterA)
        .when(fenced(afterA, completeTask('a', 5_000, { output: { n: 1 } })))
        .then([
          ...succeeded('a', 5_000, { n: 1 }),
          scheduled('b', 5_000, { input: INPUT, nodes: { a: { n: 1 } } }),
          scheduled('c', 5_000, { input: INPUT, nodes: { a: { n: 1 } } }),
        ]);
    });

    it('waits for the other branch: b alone schedules nothing', () => {
      const history = play(afterA, [completeTask('a', 5_000, { output: 1 }), claimTask('b', 6_000), claimTask('c', 6_000)]);
      given(history)
        .when(fenced(history, completeTask('b', 7_000, { output: 'b' })))
        .then(succeeded('b', 7_000, 'b'));
    });

    it('runs to the end with one attempt: d’s task gets both outputs, and d’s end ends the execution with the leaves’ outputs', () => {
      const history = play(afterA, [completeTask('a', 5_000, { output: 1 }), ...claimedAndDone('b', 6_000, 'b'), claimTask('c', 6_000)]);
      given(history)
        .when(fenced(history, completeTask('c', 8_000, { output: 'c' })))
        .then([...succeeded('c', 8_000, 'c'), scheduled('d', 8_000, { input: INPUT, nodes: { b: 'b', c: 'c' } })]);

      const atD = play(history, [completeTask('c', 8_000, { output: 'c' }), claimTask('d', 9_000)]);
      given(atD)
        .when(fenced(atD, completeTask('d', 9_100, { output: { done: true } })))
        .then([
          ...succeeded('d', 9_100, { done: true }),
          { type: 'ExecutionSucceeded', data: { output: { d: { done: true } }, at: iso(9_100) } },
        ]);
      const ended = play(atD, [completeTask('d', 9_100, { output: { done: true } })]);
      expect(attemptsScheduled(ended)).toBe(1);
      const state = fold(executionDecider, ended);
      expect(state.status !== 'not_started' && Object.values(state.tasks).map((t) => t.status)).toEqual(Array(4).fill('succeeded'));
      expect(state).toMatchObject({ status: 'succeeded', output: { d: { done: true } } });
      expect(state.status !== 'not_started' && Object.values(state.nodes).map((n) => n.status)).toEqual([
        'succeeded',
        'succeeded',
        'succeeded',
        'succeeded',
      ]);
    });

    it('shows the tasks it scheduled as the execution’s waits, so the execution stays waiting', () => {
      const history = play(afterA, [completeTask('a', 5_000, { output: 1 })]);
      expect(fold(executionDecider, history)).toMatchObject({
        status: 'waiting',
        waits: [
          { nodeId: 'a', kind: 'task' },
          { nodeId: 'b', kind: 'task' },
          { nodeId: 'c', kind: 'task' },
        ],
      });
    });

    it('decides at the suspension when a’s task ended while the attempt still ran', () => {
      const history: ExecutionEvent[] = [...suspendedAtA(DIAMOND).slice(0, 4)];
      const done = play(history, [claimTask('a', 2_500), completeTask('a', 2_800, { output: 1 })]);
      const command = completeAttempt({ at: 3_000, outcome: 'suspended' });
      given(done)
        .when({ ...command, data: { ...command.data, tasks: ['a'] } })
        .then([
          { type: 'AttemptSuspended', data: { attemptId: ATTEMPT_1, waits: [{ nodeId: 'a', kind: 'task' }], at: iso(3_000) } },
          scheduled('b', 3_000, { input: INPUT, nodes: { a: 1 } }),
          scheduled('c', 3_000, { input: INPUT, nodes: { a: 1 } }),
        ]);
    });
  });

  describe('a built-in node, an input expression or an approval needs the worker: one resume attempt', () => {
    it.each<[string, Node]>([
      ['a noop node', { id: 'b', type: 'noop' }],
      ['a task node with an input expression', task('b', { config: { queue: 'q', input: '{ "x": input.day }' } })],
      ['an approval node', { id: 'b', type: 'approval' }],
    ])('a → b, b being %s', (_, b) => {
      const history = play(suspendedAtA(graphOf([task('a'), b], [['a', 'b']])), [claimTask('a', 4_000)]);
      given(history)
        .when(fenced(history, completeTask('a', 5_000, { output: 1 })))
        .then([...succeeded('a', 5_000, 1), resumeAt(5_000)]);
    });

    it('resumes, and schedules no task, when a task and a built-in node become runnable together', () => {
      const workflow = graphOf(
        [task('a'), task('b'), { id: 'c', type: 'noop' }],
        [
          ['a', 'b'],
          ['a', 'c'],
        ],
      );
      const history = play(suspendedAtA(workflow), [claimTask('a', 4_000)]);
      given(history)
        .when(fenced(history, completeTask('a', 5_000, { output: 1 })))
        .then([...succeeded('a', 5_000, 1), resumeAt(5_000)]);
    });
  });

  describe('join trigger rules', () => {
    it.each(['all_success', 'all_done', 'one_success'])('a %s join of two tasks is scheduled once both succeeded', (trigger) => {
      const workflow = graphOf([task('a'), task('b'), task('c'), task('d', { trigger })], EDGES);
      const history = play(suspendedAtA(workflow), [
        ...claimedAndDone('a', 4_000, 1),
        ...claimedAndDone('b', 6_000, 'b'),
        claimTask('c', 6_000),
      ]);
      given(history)
        .when(fenced(history, completeTask('c', 8_000, { output: 'c' })))
        .then([...succeeded('c', 8_000, 'c'), scheduled('d', 8_000, { input: INPUT, nodes: { b: 'b', c: 'c' } })]);
    });

    it('leaves an all_done join behind a failed task to a resume attempt: the worker decides the try', () => {
      const workflow = graphOf([task('a'), task('b'), task('c'), task('d', { trigger: 'all_done' })], EDGES);
      const history = play(suspendedAtA(workflow), [
        ...claimedAndDone('a', 4_000, 1),
        ...claimedAndDone('b', 6_000, 'b'),
        claimTask('c', 6_000),
        completeTask('c', 7_000, { error: { code: 'boom', message: 'first' } }),
        claimTask('c', 9_000, 2),
      ]);
      const failure = completeTask('c', 9_500, { error: { code: 'boom', message: 'second' }, seq: 2 });
      const events = executionDecider.decide(fenced(history, failure), fold(executionDecider, history));
      expect(events.map((e) => e.type)).toEqual(['TaskFailed', 'NodeFailed', 'AttemptScheduled']);
    });
  });

  describe('failure with retries', () => {
    const history = play(suspendedAtA(DIAMOND), [...claimedAndDone('a', 4_000, 1), claimTask('b', 6_000)]);

    it('retries a failed task of a scheduled successor by its node’s policy, without an attempt', () => {
      given(history)
        .when(fenced(history, completeTask('b', 7_000, { error: { code: 'busy', message: 'later' } })))
        .then([
          { type: 'TaskFailed', data: { taskId: taskId('b'), error: { code: 'busy', message: 'later' }, at: iso(7_000) } },
          scheduled('b', 7_000, { input: INPUT, nodes: { a: 1 } }, { seq: 2, taskAttempt: 2, notBefore: 7_500 }),
        ]);
    });

    it('fails the node past its retries and resumes, so that the try fails as for any node', () => {
      const retried = play(history, [completeTask('b', 7_000, { error: { code: 'busy', message: 'later' } }), claimTask('b', 8_000, 2)]);
      const error = { code: 'busy', message: 'again' };
      given(retried)
        .when(fenced(retried, completeTask('b', 8_500, { error, seq: 2 })))
        .then([
          { type: 'TaskFailed', data: { taskId: taskId('b', 2), error, at: iso(8_500) } },
          { type: 'NodeFailed', data: { attemptId: ATTEMPT_1, nodeId: 'b', error, at: iso(8_500) } },
          resumeAt(8_500),
        ]);
    });
  });

  describe('cancel', () => {
    const history = play(suspendedAtA(DIAMOND), [...claimedAndDone('a', 4_000, 1), claimTask('b', 6_000)]);

    it('cancels the execution and every task the control plane scheduled, in one append', () => {
      given(history)
        .when(requestCancel({ at: 7_000, reason: null }))
        .then([
          { type: 'CancelRequested', data: { reason: null, requestedBy: OPERATOR, at: iso(7_000) } },
          { type: 'TaskCancelled', data: { taskId: taskId('b'), at: iso(7_000) } },
          { type: 'TaskCancelled', data: { taskId: taskId('c'), at: iso(7_000) } },
          { type: 'ExecutionCancelled', data: { reason: null, at: iso(7_000) } },
        ]);
    });

    it('refuses the completion of a task cancelled with it', () => {
      const cancelled = play(history, [requestCancel({ at: 7_000, reason: null })]);
      given(cancelled)
        .when(fenced(cancelled, completeTask('b', 8_000, { output: 'late' })))
        .thenThrows(StaleAttemptError);
    });
  });
});

describe('a completion that claims the next task of its execution (claimNext)', () => {
  const afterA = play(suspendedAtA(DIAMOND), [claimTask('a', 4_000)]);
  const andClaimNext = (command: CompleteTask): CompleteTask => ({ ...command, data: { ...command.data, claimNext: true } });
  const claimed = (nodeId: string, at: number, fencingToken: number, seq = 1): ExecutionEvent => ({
    type: 'TaskClaimed',
    data: {
      taskId: taskId(nodeId, seq),
      workerId: POLLER,
      fencingToken,
      leaseExpiresAt: iso(at + 30_000),
      timeoutAt: null,
      claimedAt: iso(at),
    },
  });

  it('claims the first successor it schedules, in the same append, with a fresh fencing token and lease', () => {
    given(afterA)
      .when(andClaimNext(fenced(afterA, completeTask('a', 5_000, { output: 1 }))))
      .then([
        ...succeeded('a', 5_000, 1),
        scheduled('b', 5_000, { input: INPUT, nodes: { a: 1 } }),
        scheduled('c', 5_000, { input: INPUT, nodes: { a: 1 } }),
        claimed('b', 5_000, 3),
      ]);
  });

  it('claims the oldest due task of the execution on the queue, one scheduled earlier and not yet claimed', () => {
    const history = play(afterA, [andClaimNext(completeTask('a', 5_000, { output: 1 }))]);
    given(history)
      .when(andClaimNext(fenced(history, completeTask('b', 6_000, { output: 'b' }))))
      .then([...succeeded('b', 6_000, 'b'), claimed('c', 6_000, 4)]);
  });

  it('claims nothing when no task of the execution is due: the other branch is claimed, a retry waits for its backoff', () => {
    const bothClaimed = play(afterA, [andClaimNext(completeTask('a', 5_000, { output: 1 })), claimTask('c', 5_500)]);
    given(bothClaimed)
      .when(andClaimNext(fenced(bothClaimed, completeTask('b', 6_000, { output: 'b' }))))
      .then(succeeded('b', 6_000, 'b'));
    const error = { code: 'busy', message: 'later' };
    given(afterA)
      .when(andClaimNext(fenced(afterA, completeTask('a', 5_000, { error }))))
      .then([
        { type: 'TaskFailed', data: { taskId: taskId('a'), error, at: iso(5_000) } },
        scheduled('a', 5_000, { input: INPUT, nodes: {} }, { seq: 2, taskAttempt: 2, notBefore: 5_500 }),
      ]);
  });

  it('claims no task of another queue', () => {
    const workflow = graphOf([task('a'), task('b', { config: { queue: 'other' } })], [['a', 'b']]);
    const history = play(suspendedAtA(workflow), [claimTask('a', 4_000)]);
    given(history)
      .when(andClaimNext(fenced(history, completeTask('a', 5_000, { output: 1 }))))
      .then([...succeeded('a', 5_000, 1), scheduled('b', 5_000, { input: INPUT, nodes: { a: 1 } }, { queue: 'other' })]);
  });

  it('claims nothing when the completion ends the execution', () => {
    const atD = play(afterA, [
      completeTask('a', 5_000, { output: 1 }),
      ...claimedAndDone('b', 6_000, 'b'),
      ...claimedAndDone('c', 6_000, 'c'),
      claimTask('d', 7_000),
    ]);
    const events = executionDecider.decide(
      andClaimNext(fenced(atD, completeTask('d', 8_000, { output: 'd' }))),
      fold(executionDecider, atD),
    );
    expect(events.map((e) => e.type)).toEqual(['TaskSucceeded', 'NodeSucceeded', 'ExecutionSucceeded']);
  });

  it('refuses a stale completion and claims nothing; the same completion sent again is a replay that claims nothing', () => {
    const stale = { ...andClaimNext(fenced(afterA, completeTask('a', 5_000, { output: 1 }))) };
    given(afterA)
      .when({ ...stale, data: { ...stale.data, fencingToken: stale.data.fencingToken - 1 } })
      .thenThrows(StaleAttemptError);
    const done = play(afterA, [andClaimNext(completeTask('a', 5_000, { output: 1 }))]);
    given(done)
      .when(andClaimNext(fenced(afterA, completeTask('a', 5_100, { output: 1 }))))
      .then([]);
  });

  it('hands the claimed task out once: a poll of it afterwards is refused', () => {
    const history = play(afterA, [andClaimNext(completeTask('a', 5_000, { output: 1 }))]);
    given(history).when(claimTask('b', 5_100)).thenThrows(StaleAttemptError);
  });

  it('claims several due tasks of the execution when asked for several, each with its own fencing token and lease', () => {
    const a = fenced(afterA, completeTask('a', 5_000, { output: 1 }));
    given(afterA)
      .when({ ...a, data: { ...a.data, claimNext: 5 } })
      .then([
        ...succeeded('a', 5_000, 1),
        scheduled('b', 5_000, { input: INPUT, nodes: { a: 1 } }),
        scheduled('c', 5_000, { input: INPUT, nodes: { a: 1 } }),
        claimed('b', 5_000, 3),
        claimed('c', 5_000, 4),
      ]);
  });

  it('claims no more than asked for', () => {
    const a = fenced(afterA, completeTask('a', 5_000, { output: 1 }));
    given(afterA)
      .when({ ...a, data: { ...a.data, claimNext: 1 } })
      .then([
        ...succeeded('a', 5_000, 1),
        scheduled('b', 5_000, { input: INPUT, nodes: { a: 1 } }),
        scheduled('c', 5_000, { input: INPUT, nodes: { a: 1 } }),
        claimed('b', 5_000, 3),
      ]);
  });
});

describe('a batch of completions of one execution (one append)', () => {
  const afterA = play(suspendedAtA(DIAMOND), [claimTask('a', 4_000)]);
  const bothOut = play(afterA, [completeTask('a', 5_000, { output: 1 }), claimTask('b', 5_100), claimTask('c', 5_200)]);
  const batch = (history: ExecutionEvent[], commands: ExecutionCommand[]) =>
    decideAll(executionDecider, commands, fold(executionDecider, history));

  it('records the ends of two sibling tasks together: the join is scheduled once, and claimed by the last completion', () => {
    const b = fenced(bothOut, completeTask('b', 6_000, { output: 'b' }));
    const c = fenced(bothOut, completeTask('c', 6_000, { output: 'c' }));
    const { events, verdicts } = batch(bothOut, [
      { ...b, data: { ...b.data, claimNext: 2 } },
      { ...c, data: { ...c.data, claimNext: 2 } },
    ]);
    expect(verdicts.every((v) => 'events' in v)).toBe(true);
    expect(events).toEqual([
      ...succeeded('b', 6_000, 'b'),
      ...succeeded('c', 6_000, 'c'),
      scheduled('d', 6_000, { input: INPUT, nodes: { b: 'b', c: 'c' } }),
      {
        type: 'TaskClaimed',
        data: {
          taskId: taskId('d'),
          workerId: POLLER,
          fencingToken: 5,
          leaseExpiresAt: iso(36_000),
          timeoutAt: null,
          claimedAt: iso(6_000),
        },
      },
    ]);
  });

  it('refuses a stale completion among good ones on its own: the others are recorded', () => {
    const b = fenced(bothOut, completeTask('b', 6_000, { output: 'b' }));
    const c = fenced(bothOut, completeTask('c', 6_000, { output: 'c' }));
    const { events, verdicts } = batch(bothOut, [{ ...b, data: { ...b.data, fencingToken: b.data.fencingToken - 1 } }, c]);
    expect('rejected' in verdicts[0] && verdicts[0].rejected).toBeInstanceOf(StaleAttemptError);
    expect(verdicts[1]).toEqual({ events: succeeded('c', 6_000, 'c') });
    expect(events).toEqual(succeeded('c', 6_000, 'c'));
  });
});

describe('root task nodes, scheduled with the start', () => {
  const ROOT_INPUT = { input: INPUT, nodes: {} };
  /** Started, a’s task scheduled with the start: no attempt. */
  const startedAtA = (workflow: WorkflowSnapshot) => play([], [startExecution({ workflow })]);

  it('schedules the tasks of the first runnable nodes with the start, under attempt 1’s id, and no attempt', () => {
    given([])
      .when(startExecution({ workflow: DIAMOND }))
      .then([executionStarted({ workflow: DIAMOND }), scheduled('a', 0, ROOT_INPUT)]);
  });

  it('schedules every root when there are several', () => {
    const workflow = graphOf([task('a'), task('b'), task('c')], [['a', 'c']]);
    given([])
      .when(startExecution({ workflow }))
      .then([executionStarted({ workflow }), scheduled('a', 0, ROOT_INPUT), scheduled('b', 0, ROOT_INPUT)]);
  });

  it('leaves the execution waiting on the root tasks, with no attempt', () => {
    expect(fold(executionDecider, startedAtA(DIAMOND))).toMatchObject({
      status: 'waiting',
      attempts: [],
      attemptsInRun: 0,
      waits: [{ nodeId: 'a', kind: 'task' }],
    });
  });

  it.each<[string, Node[]]>([
    ['a built-in root', [{ id: 'a', type: 'noop' }, task('b')]],
    ['a root task with an input expression', [task('a', { config: { queue: 'q', input: '{ "x": input.day }' } }), task('b')]],
    ['a task root beside a built-in root', [task('a'), { id: 'b', type: 'noop' }]],
  ])('schedules attempt 1 as before for %s', (_, nodes) => {
    const workflow = graphOf(nodes, []);
    given([])
      .when(startExecution({ workflow }))
      .then([executionStarted({ workflow }), attemptScheduled({ at: 0 })]);
  });

  it('runs a diamond of task nodes to its end without any attempt', () => {
    const ended = play(startedAtA(DIAMOND), [
      ...claimedAndDone('a', 1_000, 1),
      ...claimedAndDone('b', 2_000, 'b'),
      ...claimedAndDone('c', 2_000, 'c'),
      ...claimedAndDone('d', 3_000, 'd'),
    ]);
    expect(attemptsScheduled(ended)).toBe(0);
    expect(ended.filter((e) => e.type === 'TaskScheduled').map((e) => e.type === 'TaskScheduled' && e.data.attemptId)).toEqual(
      Array(4).fill(ATTEMPT_1),
    );
    expect(fold(executionDecider, ended)).toMatchObject({ status: 'succeeded', output: { d: 'd' } });
  });

  it('schedules attempt 1 itself (reason start) when the graph needs the worker after a root task', () => {
    const workflow = graphOf([task('a'), { id: 'b', type: 'noop' }], [['a', 'b']]);
    const history = play(startedAtA(workflow), [claimTask('a', 1_000)]);
    given(history)
      .when(fenced(history, completeTask('a', 2_000, { output: 1 })))
      .then([...succeeded('a', 2_000, 1), attemptScheduled({ at: 2_000 })]);
    const resumed = play(history, [completeTask('a', 2_000, { output: 1 }), claimAttempt({ at: 3_000 })]);
    expect(fold(executionDecider, resumed)).toMatchObject({ status: 'running', attemptsInRun: 1, nodes: { a: { status: 'succeeded' } } });
  });

  it('fails the node past its retries and schedules attempt 1, which finds the node failed in its try', () => {
    const error = { code: 'busy', message: 'no' };
    const history = play(startedAtA(DIAMOND), [claimTask('a', 1_000), completeTask('a', 1_500, { error }), claimTask('a', 5_000, 2)]);
    given(history)
      .when(fenced(history, completeTask('a', 5_500, { error, seq: 2 })))
      .then([
        { type: 'TaskFailed', data: { taskId: taskId('a', 2), error, at: iso(5_500) } },
        { type: 'NodeFailed', data: { attemptId: ATTEMPT_1, nodeId: 'a', error, at: iso(5_500) } },
        attemptScheduled({ at: 5_500 }),
      ]);
  });

  it('is cancelled at once, with its tasks', () => {
    given(startedAtA(DIAMOND))
      .when(requestCancel({ at: 1_000, reason: null }))
      .then([
        { type: 'CancelRequested', data: { reason: null, requestedBy: OPERATOR, at: iso(1_000) } },
        { type: 'TaskCancelled', data: { taskId: taskId('a'), at: iso(1_000) } },
        { type: 'ExecutionCancelled', data: { reason: null, at: iso(1_000) } },
      ]);
  });

  it('times out at its execution deadline, with its tasks', () => {
    const at = aWorkflow().graph.timeouts.executionMs;
    given(startedAtA(DIAMOND))
      .when(timeOutExecution({ at }))
      .then([
        { type: 'TaskCancelled', data: { taskId: taskId('a'), at: iso(at) } },
        { type: 'ExecutionTimedOut', data: { reason: 'execution deadline passed', at: iso(at) } },
      ]);
  });

  describe('in a workspace with a concurrency bound', () => {
    const waiting = play([], [startExecution({ workflow: DIAMOND, waitFor: 'workspace_quota' })]);

    it('waits for a slot first, as any start', () => {
      expect(waiting).toEqual([executionStarted({ workflow: DIAMOND }), executionAwaitingSlot({ at: 0 })]);
    });

    it('schedules the root tasks at the admission instead of attempt 1, and the run holds its slot', () => {
      given(waiting)
        .when(admitExecution({ at: 1_000 }))
        .then([scheduled('a', 1_000, ROOT_INPUT)]);
      const admitted = fold(executionDecider, play(waiting, [admitExecution({ at: 1_000 })]));
      expect(admitted).toMatchObject({ status: 'waiting', awaitingSlot: null, slotAttemptId: ATTEMPT_1, attempts: [] });
    });

    it('records nothing for a second admission', () => {
      const admitted = play(waiting, [admitExecution({ at: 1_000 })]);
      given(admitted)
        .when(admitExecution({ at: 2_000 }))
        .then([]);
    });
  });
});

describe('successors of a granted approval, decided by the control plane', () => {
  const ACTION = { pay: 42 };
  const approval = { id: 'ok', type: 'approval' };
  const decideApproval = (at: number): ExecutionCommand => ({
    type: 'DecideApproval',
    data: { nodeId: 'ok', decision: 'approve', actionDigest: actionDigestOf(ACTION), comment: null, attemptId: ATTEMPT_2 },
    metadata: { now: time(at), actor: OPERATOR },
  });
  const granted = (at: number): ExecutionEvent => ({
    type: 'ApprovalGranted',
    data: { nodeId: 'ok', actionDigest: actionDigestOf(ACTION), decidedBy: OPERATOR, comment: null, at: iso(at) },
  });
  const approvalOutput = { approved: true, decidedBy: OPERATOR, actionDigest: actionDigestOf(ACTION), comment: null };

  /** The first attempt reached the approval (and asked for the tasks of `tasks`), and suspended. */
  function suspendedAtApproval(workflow: WorkflowSnapshot, tasks: string[] = []): ExecutionEvent[] {
    const running = [
      executionStarted({ workflow }),
      attemptScheduled({ at: 0 }),
      attemptClaimed({ at: 1_000 }),
      ...tasks.map((id) => scheduled(id, 2_000, { input: INPUT, nodes: {} })),
    ];
    const command = completeAttempt({ at: 3_000, outcome: 'suspended' });
    return play(running, [{ ...command, data: { ...command.data, approval: { nodeId: 'ok', action: ACTION }, tasks } }]);
  }

  it('schedules the task that follows, with the approval’s output in its input, and no attempt', () => {
    const history = suspendedAtApproval(graphOf([approval, task('t')], [['ok', 't']]));
    given(history)
      .when(decideApproval(4_000))
      .then([granted(4_000), scheduled('t', 4_000, { input: INPUT, nodes: { ok: approvalOutput } })]);
  });

  it('ends the execution when the approval was the last node', () => {
    given(suspendedAtApproval(graphOf([approval], [])))
      .when(decideApproval(4_000))
      .then([granted(4_000), { type: 'ExecutionSucceeded', data: { output: { ok: approvalOutput }, at: iso(4_000) } }]);
  });

  it('resumes as before when a built-in node follows', () => {
    given(suspendedAtApproval(graphOf([approval, { id: 'n', type: 'noop' }], [['ok', 'n']])))
      .when(decideApproval(4_000))
      .then([granted(4_000), resumeAt(4_000)]);
  });

  it('appends nothing more while a parallel task is open, and the execution waits for it alone', () => {
    const workflow = graphOf(
      [approval, task('x'), task('d')],
      [
        ['ok', 'd'],
        ['x', 'd'],
      ],
    );
    const history = suspendedAtApproval(workflow, ['x']);
    given(history)
      .when(decideApproval(4_000))
      .then([granted(4_000)]);
    const after = play(history, [decideApproval(4_000), claimTask('x', 5_000)]);
    expect(fold(executionDecider, after)).toMatchObject({ status: 'waiting', waits: [{ nodeId: 'x', kind: 'task' }] });
    given(after)
      .when(fenced(after, completeTask('x', 6_000, { output: 'x' })))
      .then([...succeeded('x', 6_000, 'x'), scheduled('d', 6_000, { input: INPUT, nodes: { ok: approvalOutput, x: 'x' } })]);
  });
});
