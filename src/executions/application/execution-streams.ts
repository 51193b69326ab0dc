import { Inject, Injectable, Optional } from '@nestjs/common';
import { CLOCK, type Clock } from '../../core/clock.port.js';
import { type BatchOutcome, type CommandInput, type CommandOutcome, handleCommand, handleCommands } from '../../core/command-handler.js';
import { NotFoundError } from '../../core/errors.js';
import { EVENT_STORE, type EventStore, type RecordedEvent } from '../../core/event-store.port.js';
import { ID_GENERATOR, type IdGenerator } from '../../core/ids.js';
import { METRICS, NO_METRICS, type Metrics } from '../../core/metrics.port.js';
import { StreamStateCache } from '../../core/stream-state-cache.js';
import { currentTraceHeaders } from '../../observability/tracing.js';
import type { ExecutionCommand } from '../domain/execution.commands.js';
import type { ExecutionEvent } from '../domain/execution.events.js';
import { EXECUTION_SCHEMA_VERSION, executionStreamId, parseExecutionEvent } from '../domain/execution-event.parser.js';
import { createExecutionDecider, executionDecider } from '../domain/execution.decider.js';
import { APP_CONFIG, type AppConfig, executionLimitsOf } from '../../config/config.js';
import { type ExecutionState, type StartedExecution } from '../domain/execution.state.js';
import { recordExecutionFacts } from './execution-metrics.js';

export type ExecutionOutcome = CommandOutcome<ExecutionEvent, ExecutionState>;
export type ExecutionBatchOutcome = BatchOutcome<ExecutionEvent, ExecutionState>;
export type ExecutionCommandInput = CommandInput<ExecutionCommand, ExecutionState>;

/** Told of every append this process made to an execution stream, with the events it appended (in order). */
export type AppendListener = (executionId: string, events: readonly ExecutionEvent[], state: ExecutionState) => void;

/**
 * The execution streams (`execution-<id>`): handles domain commands on one through the generic
 * command handler (read, fold, decide, append with the expected revision), and loads one. The
 * only place that knows how executions are stored. One instance per process
 * (ExecutionStreamsModule), so its cache of folded states serves every role: the claim taken
 * over HTTP and the results ingested from the bus decide without re-reading.
 */
@Injectable()
export class ExecutionStreams {
  private readonly cache = new StreamStateCache<ExecutionState>(10_000);
  private readonly listeners = new Set<AppendListener>();
  /** Decides under the configured bounds of one execution (promise 13); the defaults without a configuration. */
  private readonly decider: typeof executionDecider;

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(CLOCK) readonly clock: Clock,
    @Inject(ID_GENERATOR) readonly ids: IdGenerator,
    @Optional() @Inject(METRICS) private readonly metrics: Metrics = NO_METRICS,
    @Optional() @Inject(APP_CONFIG) config: AppConfig | null = null,
  ) {
    this.decider = config === null ? executionDecider : createExecutionDecider(executionLimitsOf(config));
  }

  /**
   * `eventIds` makes the ids of the appended events deterministic (a retry must not add a second
   * fact); `newStream` skips the read of a stream whose id was just made at random.
   */
  async handle(
    executionId: string,
    command: ExecutionCommandInput,
    options: { eventIds?: (index: number) => string; newStream?: boolean } = {},
  ): Promise<ExecutionOutcome> {
    const outcome = await handleCommand({ ...this.options(executionId, options.eventIds), command, assumeNewStream: options.newStream });
    this.appended(executionId, outcome);
    return outcome;
  }

  /**
   * Several commands on one execution in one append (results of one worker batch): each is
   * decided on the state the previous ones left; one the domain refuses gets its verdict and
   * writes nothing, the others commit together.
   */
  async handleBatch(executionId: string, commands: ExecutionCommandInput[]): Promise<ExecutionBatchOutcome> {
    const outcome = await handleCommands({ ...this.options(executionId), commands });
    this.appended(executionId, outcome);
    return outcome;
  }

  /**
   * Listens to this process's appends to execution streams, as they are made (before the log
   * shows them): e.g. the task board offers the tasks an append scheduled at once. A listener
   * must not throw. Returns the function that stops listening.
   */
  onAppend(listener: AppendListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private appended(executionId: string, outcome: ExecutionOutcome): void {
    if (outcome.appended === null) return;
    recordExecutionFacts(this.metrics, outcome.events, outcome.state);
    for (const listener of this.listeners) listener(executionId, outcome.events, outcome.state);
  }

  /**
   * Folds, in one read of the store, the executions whose state is not cached, so that commands
   * on many of them (a batch of due timers) decide without a read each. Only a hint: a state
   * that is stale by the time of the append conflicts and is read again. A no-op on a store that
   * cannot read several streams at once.
   */
  async prefetch(executionIds: readonly string[]): Promise<void> {
    const missing = [...new Set(executionIds.map(executionStreamId))].filter((id) => !this.cache.has(id));
    if (missing.length === 0 || this.store.readStreams === undefined) return;
    for (const [streamId, history] of await this.store.readStreams(missing)) {
      const state = history.map(parseExecutionEvent).reduce(this.decider.evolve, this.decider.initialState());
      this.cache.set(streamId, { revision: history[history.length - 1].revision, state });
    }
  }

  private options(executionId: string, eventId?: (index: number) => string) {
    return {
      store: this.store,
      streamId: executionStreamId(executionId),
      decider: this.decider,
      parseEvent: parseExecutionEvent,
      eventId: eventId ?? (() => this.ids.uuid()),
      // The owning workspace rides on every event, so readers of the global log can route and
      // authorize without folding the stream; the actor is whoever sent the command; the trace
      // context of the command (when traced) lets the dispatch continue its trace.
      metadata: (state: ExecutionState, command: ExecutionCommand) => ({
        schemaVersion: EXECUTION_SCHEMA_VERSION,
        actor: command.metadata.actor,
        ...(state.status === 'not_started' ? {} : { workspaceId: state.workspaceId, executionId: state.executionId }),
        ...currentTraceHeaders(),
      }),
      cache: this.cache,
    };
  }

  /** The execution's history and folded state; NotFoundError when it does not exist. */
  async load(executionId: string): Promise<{ state: StartedExecution; history: RecordedEvent[] }> {
    const history = await this.store.readStream(executionStreamId(executionId));
    const state = history.map(parseExecutionEvent).reduce(this.decider.evolve, this.decider.initialState());
    if (state.status === 'not_started') throw new NotFoundError('execution not found');
    return { state, history };
  }
}

/** Position of a command's last event: the one it appended, or for a replay the stream's last. */
export function lastPosition(outcome: ExecutionOutcome): string {
  const position = outcome.appended?.position ?? outcome.history.at(-1)?.position;
  if (position === undefined) throw new Error('a handled command left an empty stream');
  return position;
}

/** Position of the last event of an append; for a replay, of the recorded event that matched. */
export function positionOf(history: readonly RecordedEvent[], match: (e: RecordedEvent) => boolean): string {
  const found = history.find(match);
  if (!found) throw new Error('replayed command has no recorded event to answer from');
  return found.position;
}
