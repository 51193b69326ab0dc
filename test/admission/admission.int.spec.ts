import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from '@jest/globals';
import type { Admission, AdmissionHooks, Slot } from '../../src/admission/application/admission.js';
import { createAdmission } from '../../src/admission/admission.module.js';
import { AdmissionQueue } from '../../src/admission/infrastructure/admission-queue.js';
import type { RecordedEvent } from '../../src/core/event-store.port.js';
import type { WorkflowSnapshot } from '../../src/executions/domain/execution.events.js';
import { CheckpointStore } from '../../src/postgres/checkpoint-store.js';
import { createWatchdog } from '../../src/watchdog/watchdog.module.js';
import { WorkspaceStreams } from '../../src/workspaces/application/workspace-streams.js';
import { quotaStreamId } from '../../src/workspaces/domain/workspace-identity.js';
import { openProcessFixture, type ProcessFixture } from '../dispatch/support/process-fixture.js';
import { eventually } from '../support/eventually.js';
import { aWorkflow } from '../support/executions/execution-fixtures.js';
import { auditSemaphore } from '../support/workspaces/quota-audit.js';

/**
 * The admission against a real Postgres (event store, queue and checkpoints), with the execution
 * streams playing the api's and the workers' part: starts as the start handler makes them, ends
 * as workers report them. Each test has a store of its own.
 */
const WS = 'ws-quota';

/** A hook that stands for a process killed at that point: it waits for the stop, then throws, so nothing after it runs. */
function killAt(onReached: (slot: Slot) => void) {
  return (slot: Slot, signal: AbortSignal) =>
    new Promise<void>((_, reject) => {
      onReached(slot);
      const killed = () => reject(new Error('killed'));
      if (signal.aborted) killed();
      else signal.addEventListener('abort', killed, { once: true });
    });
}

describe('the admission (real Postgres)', () => {
  let f: ProcessFixture;
  let workspaces: WorkspaceStreams;
  let queue: AdmissionQueue;
  const running: Admission[] = [];
  const stopped: Array<() => Promise<void>> = [];

  async function open() {
    f = await openProcessFixture('postgres');
    workspaces = new WorkspaceStreams(f.store, f.clock, f.ids);
    queue = await AdmissionQueue.open(f.sql);
  }

  afterEach(async () => {
    await Promise.all(running.splice(0).map((admission) => admission.stop()));
    for (const stop of stopped.splice(0)) await stop();
    await f?.close();
  });

  /** An admission process of its own (its own quota and settings caches, as another process would have). */
  async function startAdmission(hooks?: AdmissionHooks, waitingPage?: number): Promise<Admission> {
    const admission = await createAdmission(
      {
        store: f.store,
        executions: f.executions,
        workspaces: new WorkspaceStreams(f.store, f.clock, f.ids),
        sql: f.sql,
        clock: f.clock,
        logger: f.logger,
      },
      { sweepMs: 50, hooks, waitingPage },
    );
    running.push(admission);
    admission.start();
    return admission;
  }

  async function stopAdmission(admission: Admission): Promise<void> {
    running.splice(running.indexOf(admission), 1);
    await admission.stop();
  }

  const setBound = (maxConcurrentExecutions: number | null) =>
    workspaces.changeSettings(WS, { maxConcurrentExecutions, maxExecutionsPerTree: null }, 'alice');

  /** A start as the start handler makes it: the bound in force decides whether its attempt waits. */
  async function start(workflow: WorkflowSnapshot = aWorkflow()): Promise<string> {
    const { state } = await workspaces.settings(WS);
    const executionId = randomUUID();
    await f.executions.handle(executionId, {
      type: 'StartExecution',
      data: {
        executionId,
        workspaceId: WS,
        workflow,
        input: {},
        idempotency: null,
        attemptId: randomUUID(),
        waitFor: state.settings.maxConcurrentExecutions === null ? null : 'workspace_quota',
      },
      metadata: { now: f.clock.now(), actor: 'oscar' },
    });
    return executionId;
  }

  const scheduled = async (executionId: string) => (await f.events(executionId)).filter((e) => e.type === 'AttemptScheduled');
  const isAdmitted = async (executionId: string) => (await scheduled(executionId)).length > 0;
  const quotaEvents = (): Promise<RecordedEvent[]> => f.store.readStream(quotaStreamId(WS));
  const holders = async () => [...(await workspaces.quota(WS)).state.holders.values()];

  /** A worker claims the run's attempt (unless one holds it) and reports success. */
  async function finish(executionId: string): Promise<void> {
    const attempt = (await f.executions.load(executionId)).state.attempts.at(-1)!;
    const fence =
      attempt.status === 'running'
        ? { attemptId: attempt.attemptId, workerId: attempt.workerId, fencingToken: attempt.fencingToken }
        : await f.claim(executionId, attempt.attemptId);
    await f.executions.handle(executionId, {
      type: 'CompleteAttempt',
      data: { ...fence, outcome: 'succeeded', output: null, nextAttemptId: randomUUID(), jitter: 0 },
      metadata: { now: f.clock.now(), actor: fence.workerId },
    });
  }

  /** The grants never outnumbered the bound each was decided under, replaying the semaphore from its first event. */
  async function expectBoundHeld() {
    const held = new Set<string>();
    for (const event of await quotaEvents()) {
      const data = event.data as { attemptId: string; bound: number | null };
      if (event.type === 'SlotReleased') held.delete(data.attemptId);
      else {
        expect(held.has(data.attemptId)).toBe(false);
        held.add(data.attemptId);
        if (data.bound !== null) expect(held.size).toBeLessThanOrEqual(data.bound);
      }
    }
  }

  describe.each([
    ['between a grant and the scheduling of its attempt', 'afterGrant'],
    ['between the scheduling of an attempt and the queue learning it', 'afterAdmit'],
  ] as const)('(b) a process killed %s', (_, hook) => {
    it('is finished by the next process: the run is scheduled exactly once, and the next one waits its turn', async () => {
      await open();
      await setBound(1);
      const first = await start();
      const second = await start();
      let reached: Slot | null = null;
      const killed = await startAdmission({ [hook]: killAt((slot) => (reached ??= slot)) });
      await eventually(() => reached !== null, 'the admission to reach the fault');
      expect(reached!.executionId).toBe(first);
      expect(await scheduled(first)).toHaveLength(hook === 'afterGrant' ? 0 : 1);
      await stopAdmission(killed);

      const restarted = await startAdmission();
      await eventually(async () => expect(await queue.of(first)).toMatchObject([{ status: 'admitted' }]), 'the restart to admit the run');
      // More passes, from two processes, change nothing.
      await Promise.all([restarted.passAll(), (await startAdmission()).passAll()]);
      await restarted.passAll();
      expect(await scheduled(first)).toHaveLength(1);
      expect(await isAdmitted(second)).toBe(false);
      expect((await quotaEvents()).map((e) => [e.type, (e.data as { executionId: string }).executionId])).toEqual([['SlotGranted', first]]);

      await finish(first);
      await eventually(() => isAdmitted(second), 'the next run to be admitted once the first ended');
      expect(await scheduled(second)).toHaveLength(1);
      expect(await holders()).toEqual([second]);
      await expectBoundHeld();
    });
  });

  it('(b) a process killed between giving a slot back and the queue learning it: the next run is admitted exactly once', async () => {
    await open();
    await setBound(1);
    const first = await start();
    const second = await start();
    let reached: Slot | null = null;
    const killed = await startAdmission({ afterRelease: killAt((slot) => (reached ??= slot)) });
    await eventually(() => isAdmitted(first), 'the first run to be admitted');
    await finish(first);
    await eventually(() => reached !== null, 'the admission to reach the fault');
    await stopAdmission(killed);
    expect(await holders()).toEqual([]);
    expect(await isAdmitted(second)).toBe(false);

    const restarted = await startAdmission();
    await eventually(() => isAdmitted(second), 'the restart to admit the next run');
    await restarted.passAll();
    expect(await scheduled(second)).toHaveLength(1);
    expect((await quotaEvents()).map((e) => [e.type, (e.data as { executionId: string }).executionId])).toEqual([
      ['SlotGranted', first],
      ['SlotReleased', first],
      ['SlotGranted', second],
    ]);
  });

  it('gives back, after a restart, the slot of a run it admitted before (the end comes after its checkpoint)', async () => {
    await open();
    await setBound(1);
    const first = await start();
    const second = await start();
    const before = await startAdmission();
    await eventually(() => isAdmitted(first), 'the first run to be admitted');
    const checkpoints = await CheckpointStore.open(f.sql);
    const waited = (await f.events(second)).find((e) => e.type === 'ExecutionAwaitingSlot')!.position;
    await eventually(async () => ((await checkpoints.load('admission')) ?? '') >= waited, 'the checkpoint to pass both waits');
    await stopAdmission(before);

    await finish(first);
    await startAdmission();
    await eventually(() => isAdmitted(second), 'the restarted admission to give the slot back and admit the next run');
    expect(await holders()).toEqual([second]);
  });

  it('admits the next runs at once when the bound is raised, none while it is below the running count, all when it is removed', async () => {
    await open();
    await setBound(1);
    const runs = [await start(), await start(), await start(), await start(), await start()];
    const admission = await startAdmission();
    await eventually(() => isAdmitted(runs[0]), 'the first run to be admitted');

    await setBound(3);
    await eventually(async () => expect(await holders()).toEqual(runs.slice(0, 3)), 'two more runs to be admitted');
    expect(await isAdmitted(runs[3])).toBe(false);

    // Lowered to 1 with 3 running: nothing new until fewer than 1 run.
    await setBound(1);
    await finish(runs[0]);
    await eventually(async () => expect(await holders()).toEqual(runs.slice(1, 3)), 'the first slot to be given back');
    await admission.passAll();
    await finish(runs[1]);
    await eventually(async () => expect(await holders()).toEqual(runs.slice(2, 3)), 'the second slot to be given back');
    await admission.passAll();
    expect(await isAdmitted(runs[3])).toBe(false);
    await finish(runs[2]);
    await eventually(async () => expect(await holders()).toEqual([runs[3]]), 'the fourth run to be admitted');

    await setBound(null);
    await eventually(() => isAdmitted(runs[4]), 'the last run to be admitted once the bound is removed');
    expect(await holders()).toEqual(runs.slice(3));
    await expectBoundHeld();
  });

  it('reads a long queue a page at a time, in order', async () => {
    await open();
    await setBound(1);
    const runs: string[] = [];
    for (let i = 0; i < 7; i++) runs.push(await start());
    await startAdmission(undefined, 2);
    await eventually(() => isAdmitted(runs[0]), 'the first run to be admitted');
    await setBound(null);
    await eventually(async () => expect(await holders()).toEqual(runs), 'every run to be admitted, pages of two');
    const { granted } = await auditSemaphore(f.store, WS);
    expect(granted).toEqual(runs);
  });

  it('counts the queue deadline from the admission: a wait longer than queueMs times nothing out', async () => {
    await open();
    const workflow = aWorkflow({ timeouts: { queueMs: 1_000, leaseMs: 60_000 } });
    await setBound(1);
    const first = await start(workflow);
    const second = await start(workflow);
    const watchdog = await createWatchdog(
      { store: f.store, executions: f.executions, sql: f.sql, clock: f.clock, ids: f.ids, logger: f.logger },
      { tickMs: 20 },
    );
    watchdog.start();
    stopped.push(() => watchdog.stop());
    await startAdmission();
    await eventually(() => isAdmitted(first), 'the first run to be admitted');
    const attemptId = ((await scheduled(first))[0].data as { attemptId: string }).attemptId;
    await f.claim(first, attemptId);

    // The second run waits five times its queueMs; the watchdog has nothing of it to time out.
    f.clock.advance(5_000);
    const checkpoints = await CheckpointStore.open(f.sql);
    const head = await f.store.headPosition();
    await eventually(async () => ((await checkpoints.load('watchdog')) ?? '') >= (head ?? ''), 'the watchdog to catch up');
    await watchdog.fireDue();
    expect(await f.types(second)).toEqual(['ExecutionStarted', 'ExecutionAwaitingSlot']);

    const admittedAt = f.clock.now().getTime();
    await finish(first);
    await eventually(() => isAdmitted(second), 'the second run to be admitted');
    const attempt = (await scheduled(second))[0].data as { scheduledAt: string; queueDeadline: string };
    expect(Date.parse(attempt.scheduledAt)).toBeGreaterThanOrEqual(admittedAt);
    expect(Date.parse(attempt.queueDeadline) - Date.parse(attempt.scheduledAt)).toBe(1_000);
  });

  it('times out a run that waited past its execution deadline; it took no slot and frees none', async () => {
    await open();
    await setBound(1);
    const long = await start(aWorkflow({ timeouts: { executionMs: 3_600_000 } }));
    const short = await start(aWorkflow({ timeouts: { executionMs: 2_000 } }));
    const watchdog = await createWatchdog(
      { store: f.store, executions: f.executions, sql: f.sql, clock: f.clock, ids: f.ids, logger: f.logger },
      { tickMs: 20 },
    );
    watchdog.start();
    stopped.push(() => watchdog.stop());
    const admission = await startAdmission();
    await eventually(() => isAdmitted(long), 'the first run to be admitted');

    f.clock.advance(2_001);
    await eventually(async () => expect((await f.types(short)).at(-1)).toBe('ExecutionTimedOut'), 'the waiting run to time out');
    expect(await f.types(short)).toEqual(['ExecutionStarted', 'ExecutionAwaitingSlot', 'ExecutionTimedOut']);
    const later = await start();
    await eventually(async () => expect(await queue.of(short)).toMatchObject([{ status: 'released' }]), 'the admission to let it go');
    await admission.passAll();
    expect(await holders()).toEqual([long]);
    expect(await isAdmitted(later)).toBe(false);

    await finish(long);
    await eventually(() => isAdmitted(later), 'the run behind it to be admitted');
    expect(await isAdmitted(short)).toBe(false);
    expect((await quotaEvents()).some((e) => (e.data as { executionId: string }).executionId === short)).toBe(false);
  });
});
