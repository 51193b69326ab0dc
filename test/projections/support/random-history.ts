import type { Clock } from '../../../src/core/clock.port.js';
import { DomainError } from '../../../src/core/errors.js';
import type { EventStore } from '../../../src/core/event-store.port.js';
import { uuidV5 } from '../../../src/core/ids.js';
import { ExecutionStreams } from '../../../src/executions/application/execution-streams.js';
import type { ExecutionCommand } from '../../../src/executions/domain/execution.commands.js';
import type { RetryPolicy, WorkflowSnapshot } from '../../../src/executions/domain/execution.events.js';
import { currentAttempt, type ExecutionState, type StartedExecution } from '../../../src/executions/domain/execution.state.js';

/** A small, fast, seedable PRNG (mulberry32): the same seed replays the same history. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const NODES = ['a', 'b', 'c'];

function workflow(random: () => number): WorkflowSnapshot {
  const retry: RetryPolicy = {
    maxAttempts: 1 + Math.floor(random() * 3),
    initialIntervalMs: 0,
    backoffCoefficient: 1,
    maxIntervalMs: 0,
    nonRetryable: [],
  };
  return {
    workflowId: '6a1f0000-0000-4000-8000-000000000001',
    name: random() < 0.5 ? 'chain' : 'nightly',
    revision: 1 + Math.floor(random() * 2),
    digest: 'sha256:random-history',
    graph: {
      nodes: NODES.map((id) => ({ id, type: 'noop' })),
      edges: [
        { from: 'a', to: 'b' },
        { from: 'b', to: 'c' },
      ],
      retry,
      timeouts: { queueMs: 60_000, leaseMs: 30_000, executionMs: 3_600_000 },
    },
  };
}

export interface RandomHistoryOptions {
  seed: number;
  /** Commands to issue (rejected ones included: the deciders decide). */
  steps: number;
  /** Commands issued at once, so that appends of several executions interleave in the log. */
  concurrency?: number;
  workspaces?: string[];
}

/**
 * Drives the real execution deciders (through the production ExecutionStreams) with random
 * commands: starts (every third waiting for a quota slot), admissions, claims, heartbeats, node
 * results, completions, timeouts, cancels and redrives, on a clock that jumps forward so leases
 * and queue deadlines expire. Commands a decider rejects append nothing, so every history in the
 * store is a valid one.
 */
export async function writeRandomHistories(
  store: EventStore,
  options: RandomHistoryOptions,
): Promise<{ executions: string[]; appended: number }> {
  const random = seededRandom(options.seed);
  let now = Date.parse('2031-01-01T00:00:00.000Z');
  const clock: Clock = { now: () => new Date(now) };
  let idCounter = 0;
  const ids = { uuid: () => uuidV5(`random-history:${options.seed}:${idCounter++}`) };
  const streams = new ExecutionStreams(store, clock, ids);
  const executions: string[] = [];
  const workspaces = options.workspaces ?? ['ws-a', 'ws-b'];
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
  let appended = 0;

  const issue = async (executionId: string, command: (state: ExecutionState) => ExecutionCommand | null) => {
    try {
      const outcome = await streams.handle(executionId, (state) => {
        const next = command(state);
        if (next === null) throw new SkipCommand();
        return next;
      });
      appended += outcome.events.length;
    } catch (error) {
      if (!(error instanceof DomainError) && !(error instanceof SkipCommand)) throw error;
    }
  };

  for (let step = 0; step < options.steps; step += options.concurrency ?? 1) {
    now += Math.floor(random() * (random() < 0.1 ? 70_000 : 3_000));
    const at = new Date(now);
    const batch = Array.from({ length: options.concurrency ?? 1 }, () => {
      if (executions.length === 0 || random() < 0.15) {
        const executionId = ids.uuid();
        executions.push(executionId);
        const data = {
          executionId,
          workspaceId: pick(workspaces),
          workflow: workflow(random),
          input: { step },
          idempotency: null,
          attemptId: ids.uuid(),
          waitFor: step % 3 === 0 ? ('workspace_quota' as const) : null,
        };
        return () => issue(executionId, () => ({ type: 'StartExecution', data, metadata: { now: at, actor: 'oscar' } }));
      }
      const executionId = pick(executions);
      const roll = random();
      return () => issue(executionId, (state) => (state.status === 'not_started' ? null : nextCommand(state, roll, random, ids.uuid, at)));
    });
    await Promise.all(batch.map((run) => run()));
  }
  return { executions, appended };
}

class SkipCommand extends Error {}

function nextCommand(s: StartedExecution, roll: number, random: () => number, uuid: () => string, now: Date): ExecutionCommand | null {
  const attempt = currentAttempt(s);
  const workerId = `worker-${Math.floor(random() * 3)}`;
  // Each command says who sent it, as in production (src/core/actors.ts).
  const by = (actor: string) => ({ now, actor });
  if (roll < 0.06) return { type: 'RequestCancel', data: { reason: random() < 0.5 ? null : 'random cancel' }, metadata: by('oscar') };
  if (roll < 0.12)
    return {
      type: 'RequestRedrive',
      data: {
        redriveId: uuid(),
        idempotencyKey: `key-${Math.floor(random() * 4)}`,
        fingerprint: 'f',
        attemptId: uuid(),
        waitFor: roll < 0.09 ? 'workspace_quota' : null,
      },
      metadata: by('alice'),
    };
  if (roll < 0.14) return { type: 'TimeOutExecution', data: {}, metadata: by('system:watchdog') };
  if (s.awaitingSlot !== null)
    return { type: 'AdmitExecution', data: { attemptId: s.awaitingSlot.attemptId }, metadata: by('system:dispatcher') };
  if (attempt === undefined) return null;
  if (roll < 0.2)
    return {
      type: 'TimeOutAttempt',
      data: { attemptId: attempt.attemptId, nextAttemptId: uuid(), jitter: random() },
      metadata: by('system:watchdog'),
    };
  if (attempt.status === 'queued')
    return { type: 'ClaimAttempt', data: { attemptId: attempt.attemptId, workerId }, metadata: by(`worker:${workerId}`) };
  if (attempt.status !== 'running') return null;
  const fence = { attemptId: attempt.attemptId, workerId: attempt.workerId, fencingToken: attempt.fencingToken };
  const metadata = by(`worker:${attempt.workerId}`);
  if (roll < 0.35) return { type: 'Heartbeat', data: fence, metadata };
  if (roll < 0.75) {
    const kind = random() < 0.3 ? 'node_started' : random() < 0.85 ? 'node_succeeded' : random() < 0.5 ? 'node_failed' : 'node_skipped';
    const nodeId = NODES[Math.floor(random() * NODES.length)];
    return { type: 'RecordNodeResult', data: { ...fence, kind, nodeId, output: { n: Math.floor(random() * 100) } }, metadata };
  }
  const outcome = s.cancelRequest !== null ? 'cancelled' : random() < 0.6 ? 'succeeded' : 'failed';
  const error = outcome === 'failed' ? { code: 'boom', message: 'random failure' } : undefined;
  return {
    type: 'CompleteAttempt',
    data: { ...fence, outcome, output: { done: true }, error, nextAttemptId: uuid(), jitter: random() },
    metadata,
  };
}
