import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { systemClock } from '../../src/core/clock.port.js';
import { StaleAttemptError } from '../../src/core/errors.js';
import { randomIds } from '../../src/core/ids.js';
import { ExecutionStreams } from '../../src/executions/application/execution-streams.js';
import type { ExecutionCommand } from '../../src/executions/domain/execution.commands.js';
import { executionStreamId, parseExecutionEvent } from '../../src/executions/domain/execution-event.parser.js';
import type { WorkflowSnapshot } from '../../src/executions/domain/execution.events.js';
import { taskIdOf } from '../../src/executions/domain/tasks.js';
import { aWorkflow } from '../support/executions/execution-fixtures.js';
import type { ContractContext } from './event-store-contract.support.js';

const DIAMOND: WorkflowSnapshot = (() => {
  const base = aWorkflow();
  return {
    ...base,
    graph: {
      ...base.graph,
      nodes: ['a', 'b', 'c', 'd'].map((id) => ({ id, type: 'task', config: { queue: 'contract' } })),
      edges: [
        { from: 'a', to: 'b' },
        { from: 'a', to: 'c' },
        { from: 'b', to: 'd' },
        { from: 'c', to: 'd' },
      ],
    },
  };
})();

const meta = (actor: string) => ({ now: new Date(), actor });

/**
 * Part of eventStoreContract: the appends of a workflow of task nodes, through the execution
 * streams as the control plane makes them (the decider, one append per command with the expected
 * revision), on two store instances as two api processes would: a diamond a → b, c → d runs to
 * its end with no attempt (the start schedules the root task), the successors' tasks appended
 * with the end of the task before them.
 */
export function taskWorkflowAppendsContract({ store, otherStore }: ContractContext): void {
  describe('when a workflow of task nodes runs', () => {
    it('appends its whole life on its own stream, each fact once, with no attempt', async () => {
      const executionId = randomUUID();
      const attemptId = randomUUID();
      const streams = [new ExecutionStreams(store(), systemClock, randomIds), new ExecutionStreams(otherStore(), systemClock, randomIds)];
      const on = (command: ExecutionCommand, instance = 0) => streams[instance].handle(executionId, command);

      await on({
        type: 'StartExecution',
        data: { executionId, workspaceId: 'contract', workflow: DIAMOND, input: { n: 1 }, idempotency: null, attemptId },
        metadata: meta('contract'),
      });
      // a is a root task node without an input expression: the start itself scheduled its task.

      /** Two pollers on two processes race for the task; the one that won heartbeats and completes it. */
      const runTask = async (nodeId: string, output: unknown) => {
        const taskId = taskIdOf(executionId, nodeId, 1);
        const claims = await Promise.allSettled(
          [0, 1].map((i) => on({ type: 'ClaimTask', data: { taskId, workerId: `poller-${i}` }, metadata: meta(`poller-${i}`) }, i)),
        );
        const won = claims.flatMap((c, i) => (c.status === 'fulfilled' ? [i] : []));
        expect(won).toHaveLength(1);
        expect(claims.find((c) => c.status === 'rejected')).toMatchObject({ reason: expect.any(StaleAttemptError) });
        const winner = won[0];
        const state = (await streams[winner].load(executionId)).state;
        const task = { taskId, workerId: `poller-${winner}`, fencingToken: state.tasks[taskId].fencingToken! };
        await on({ type: 'HeartbeatTask', data: task, metadata: meta(task.workerId) }, 1 - winner);
        await on(
          {
            type: 'CompleteTask',
            data: { ...task, outcome: 'succeeded', output, nextAttemptId: randomUUID(), jitter: 0 },
            metadata: meta(task.workerId),
          },
          winner,
        );
      };
      await runTask('a', 'A');
      await Promise.all([runTask('b', 'B'), runTask('c', 'C')]);
      await runTask('d', 'D');

      const recorded = await store().readStream(executionStreamId(executionId));
      const events = recorded.map(parseExecutionEvent);
      expect(recorded.map((e) => e.revision)).toEqual(recorded.map((_, i) => i));
      expect(events.filter((e) => e.type === 'AttemptScheduled')).toEqual([]);
      expect(events.filter((e) => e.type === 'TaskScheduled').map((e) => e.data.nodeId)).toEqual(['a', 'b', 'c', 'd']);
      for (const type of ['TaskClaimed', 'TaskLeaseExtended', 'TaskSucceeded', 'NodeSucceeded'])
        expect(events.filter((e) => e.type === type)).toHaveLength(4);
      expect(events.filter((e) => e.type === 'TaskCancelled')).toEqual([]);
      expect(events.at(-1)).toMatchObject({ type: 'ExecutionSucceeded', data: { output: { d: 'D' } } });
      // a's end and the tasks of b and c are one append: they sit side by side in the stream.
      const afterA = events.findIndex((e) => e.type === 'TaskSucceeded');
      expect(events.slice(afterA, afterA + 4).map((e) => e.type)).toEqual([
        'TaskSucceeded',
        'NodeSucceeded',
        'TaskScheduled',
        'TaskScheduled',
      ]);
      // Readers of the global log see the same facts in the same order, whichever process wrote them.
      const log = await otherStore().readAll({ after: null, maxCount: 1_000, streamPrefixes: [executionStreamId(executionId)] });
      expect(log.map((e) => e.id)).toEqual(recorded.map((e) => e.id));
    });

    it('a completion that claims the next task races a poll of it on another process: one claim wins', async () => {
      const executionId = randomUUID();
      const streams = [new ExecutionStreams(store(), systemClock, randomIds), new ExecutionStreams(otherStore(), systemClock, randomIds)];
      const on = (command: ExecutionCommand, instance = 0) => streams[instance].handle(executionId, command);
      const task = (nodeId: string) => taskIdOf(executionId, nodeId, 1);
      await on({
        type: 'StartExecution',
        data: { executionId, workspaceId: 'contract', workflow: DIAMOND, input: {}, idempotency: null, attemptId: randomUUID() },
        metadata: meta('contract'),
      });
      await on({ type: 'ClaimTask', data: { taskId: task('a'), workerId: 'poller-0' }, metadata: meta('poller-0') });
      await on({
        type: 'CompleteTask',
        data: {
          taskId: task('a'),
          workerId: 'poller-0',
          fencingToken: 1,
          outcome: 'succeeded',
          output: 'A',
          nextAttemptId: randomUUID(),
          jitter: 0,
        },
        metadata: meta('poller-0'),
      });
      await on({ type: 'ClaimTask', data: { taskId: task('b'), workerId: 'poller-0' }, metadata: meta('poller-0') });
      // poller-0 ends b and asks for its next task (c) in the same append; poller-1 polls c at once on the other process.
      const [completion, poll] = await Promise.allSettled([
        on({
          type: 'CompleteTask',
          data: {
            taskId: task('b'),
            workerId: 'poller-0',
            fencingToken: 2,
            outcome: 'succeeded',
            output: 'B',
            nextAttemptId: randomUUID(),
            jitter: 0,
            claimNext: true,
          },
          metadata: meta('poller-0'),
        }),
        on({ type: 'ClaimTask', data: { taskId: task('c'), workerId: 'poller-1' }, metadata: meta('poller-1') }, 1),
      ]);
      expect(completion.status).toBe('fulfilled');
      const events = (await store().readStream(executionStreamId(executionId))).map(parseExecutionEvent);
      const claimsOfC = events.filter((e) => e.type === 'TaskClaimed' && e.data.taskId === task('c'));
      expect(claimsOfC).toHaveLength(1);
      const byCompletion = completion.status === 'fulfilled' && completion.value.events.some((e) => e.type === 'TaskClaimed');
      // Exactly one of the two took c: the completion's append, or the poll (then refused to the other, or never tried).
      expect(byCompletion).toBe(poll.status === 'rejected');
      expect(claimsOfC[0]).toMatchObject({ data: { workerId: byCompletion ? 'poller-0' : 'poller-1', fencingToken: 3 } });
      expect(events.filter((e) => e.type === 'TaskSucceeded')).toHaveLength(2);
    });
  });
}
