import { randomUUID } from 'node:crypto';
import { InProcessBus } from '../../../src/bus/in-process/in-process-bus.js';
import type { Bus, IncomingMessage } from '../../../src/core/bus.port.js';
import type { RecordedEvent } from '../../../src/core/event-store.port.js';
import { randomIds } from '../../../src/core/ids.js';
import { createLogger } from '../../../src/core/logger.js';
import { ExecutionStreams } from '../../../src/executions/application/execution-streams.js';
import { executionStreamId } from '../../../src/executions/domain/execution-event.parser.js';
import type { WorkflowSnapshot } from '../../../src/executions/domain/execution.events.js';
import { aWorkflow } from '../../support/executions/execution-fixtures.js';
import { AdjustableClock } from '../../support/adjustable-clock.js';
import { type StoreKind, openTestStore } from '../../support/test-app.js';

/**
 * What the background processes (dispatcher, ingestor, watchdog) run against in tests: a real
 * store (PGlite or the test Postgres) that also holds process state, the in-process bus, an
 * adjustable clock, and the execution streams to play the API's and the workers' part.
 */
export async function openProcessFixture(kind: StoreKind) {
  const opened = await openTestStore(kind);
  const clock = new AdjustableClock();
  const executions = new ExecutionStreams(opened.store, clock, randomIds);
  const logger = createLogger({ level: 'silent' });
  const fixture = {
    ...opened,
    clock,
    executions,
    /** Renewed by `renewBus`: tests that share the store (opening PGlite is slow) need not share topics. */
    bus: new InProcessBus(),
    logger,
    ids: randomIds,
    async startExecution(workflow: WorkflowSnapshot = aWorkflow()) {
      const executionId = randomUUID();
      const attemptId = randomUUID();
      await executions.handle(executionId, {
        type: 'StartExecution',
        data: { executionId, workspaceId: 'ws-a', workflow, input: {}, idempotency: null, attemptId },
        metadata: { now: clock.now(), actor: 'operator' },
      });
      return { executionId, attemptId };
    },
    async claim(executionId: string, attemptId: string, workerId = 'worker-1') {
      const outcome = await executions.handle(executionId, {
        type: 'ClaimAttempt',
        data: { attemptId, workerId },
        metadata: { now: clock.now(), actor: workerId },
      });
      const claimed = outcome.events.find((e) => e.type === 'AttemptClaimed');
      if (claimed?.type !== 'AttemptClaimed') throw new Error('claim recorded nothing');
      return { attemptId, workerId, fencingToken: claimed.data.fencingToken };
    },
    async events(executionId: string): Promise<RecordedEvent[]> {
      return opened.store.readStream(executionStreamId(executionId));
    },
    async types(executionId: string): Promise<string[]> {
      return (await opened.store.readStream(executionStreamId(executionId))).map((e) => e.type);
    },
    async renewBus() {
      await fixture.bus.close();
      fixture.bus = new InProcessBus();
    },
    async close() {
      await fixture.bus.close();
      await opened.close();
    },
  };
  return fixture;
}

export type ProcessFixture = Awaited<ReturnType<typeof openProcessFixture>>;

/** Records everything a fresh consumer group receives from a topic. */
export async function recordTopic(bus: Bus, topic: string) {
  const messages: IncomingMessage[] = [];
  await bus.ensureTopics([{ topic, partitions: 4 }]);
  const consumer = await bus.consume({ groupId: `test-${randomUUID()}`, topic, handle: async (m) => void messages.push(m) });
  return { messages, values: () => messages.map((m) => JSON.parse(m.value) as Record<string, unknown>), stop: () => consumer.stop() };
}
