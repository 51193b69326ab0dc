import { Inject, Injectable, Module, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { CLOCK, type Clock } from '../core/clock.port.js';
import { EVENT_STORE, type EventStore } from '../core/event-store.port.js';
import { ID_GENERATOR, type IdGenerator } from '../core/ids.js';
import { LOGGER, type Logger } from '../core/logger.js';
import { ExecutionStreams } from '../executions/application/execution-streams.js';
import { ExecutionStreamsModule } from '../executions/execution-streams.module.js';
import { CheckpointStore } from '../postgres/checkpoint-store.js';
import { READ_MODEL_SQL, type SqlClient } from '../postgres/sql-client.port.js';
import { TimerService, type TimerServiceDeps, type TimerServiceOptions } from './application/timer-service.js';
import { TimerTable } from './infrastructure/timer-table.js';

/** Opens the timer role's tables and builds it (not started). */
export async function createTimerService(
  deps: Omit<TimerServiceDeps, 'checkpoints' | 'timers'>,
  options?: TimerServiceOptions,
): Promise<TimerService> {
  const checkpoints = await CheckpointStore.open(deps.sql);
  const timers = await TimerTable.open(deps.sql);
  return new TimerService({ ...deps, checkpoints, timers }, options);
}

/** Runs the timer role while the module lives (the app imports the module when FLOSTRA_ROLES names `timer`). */
@Injectable()
export class TimerProcess implements OnModuleInit, OnModuleDestroy {
  private service: TimerService | null = null;

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(READ_MODEL_SQL) private readonly sql: SqlClient,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(ID_GENERATOR) private readonly ids: IdGenerator,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly executions: ExecutionStreams,
  ) {}

  async onModuleInit(): Promise<void> {
    const logger = this.logger.child({ component: 'timer' });
    this.service = await createTimerService({
      store: this.store,
      executions: this.executions,
      sql: this.sql,
      clock: this.clock,
      ids: this.ids,
      logger,
    });
    this.service.start();
    logger.info('timer role started');
  }

  async onModuleDestroy(): Promise<void> {
    await this.service?.stop();
    this.service = null;
  }
}

/** Needs the global EVENT_STORE, READ_MODEL_SQL, CLOCK, ID_GENERATOR and LOGGER providers. */
@Module({ imports: [ExecutionStreamsModule], providers: [TimerProcess] })
export class TimersModule {}
