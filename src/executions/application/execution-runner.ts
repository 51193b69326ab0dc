import { Inject, Injectable } from '@nestjs/common';
import { CLOCK, type Clock } from '../../core/clock.port.js';
import { type CommandOutcome, handleCommand } from '../../core/command-handler.js';
import { NotFoundError } from '../../core/errors.js';
import { EVENT_STORE, type EventStore, type RecordedEvent } from '../../core/event-store.port.js';
import { ID_GENERATOR, type IdGenerator } from '../../core/ids.js';
import type { ExecutionCommand } from '../domain/execution.commands.js';
import type { ExecutionEvent } from '../domain/execution.events.js';
import { EXECUTION_SCHEMA_VERSION, executionStreamId, parseExecutionEvent } from '../domain/execution-event.parser.js';
import { executionDecider } from '../domain/execution.decider.js';
import { type ExecutionState, type StartedExecution } from '../domain/execution.state.js';

export type ExecutionOutcome = CommandOutcome<ExecutionEvent, ExecutionState>;

/**
 * Runs one command against one execution stream through the generic command handler, and
 * loads executions for queries. The only place that knows how executions are stored.
 */
@Injectable()
export class ExecutionRunner {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(CLOCK) readonly clock: Clock,
    @Inject(ID_GENERATOR) readonly ids: IdGenerator,
  ) {}

  run(
    executionId: string,
    command: ExecutionCommand | ((state: ExecutionState, history: readonly RecordedEvent[]) => ExecutionCommand),
    eventId?: (index: number) => string,
  ): Promise<ExecutionOutcome> {
    return handleCommand({
      store: this.store,
      streamId: executionStreamId(executionId),
      decider: executionDecider,
      parseEvent: parseExecutionEvent,
      command,
      eventId: eventId ?? (() => this.ids.uuid()),
      // The owning workspace rides on every event, so readers of the global log can route and
      // authorize without folding the stream.
      metadata: (state) => ({
        schemaVersion: EXECUTION_SCHEMA_VERSION,
        ...(state.status === 'not_started' ? {} : { workspaceId: state.workspaceId, executionId: state.executionId }),
      }),
    });
  }

  /** The execution's history and folded state; NotFoundError when it does not exist. */
  async load(executionId: string): Promise<{ state: StartedExecution; history: RecordedEvent[] }> {
    const history = await this.store.readStream(executionStreamId(executionId));
    const state = history.map(parseExecutionEvent).reduce(executionDecider.evolve, executionDecider.initialState());
    if (state.status === 'not_started') throw new NotFoundError('execution not found');
    return { state, history };
  }
}

/** Position of the last event of an append; for a replay, of the recorded event that matched. */
export function positionOf(history: readonly RecordedEvent[], match: (e: RecordedEvent) => boolean): string {
  const found = history.find(match);
  if (!found) throw new Error('replayed command has no recorded event to answer from');
  return found.position;
}
