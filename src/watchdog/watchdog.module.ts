import { Inject, Injectable, Module, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { CLOCK, type Clock } from '../core/clock.port.js';
import { EVENT_STORE, type EventStore } from '../core/event-store.port.js';
import { ID_GENERATOR, type IdGenerator } from '../core/ids.js';
import { LOGGER, type Logger } from '../core/logger.js';
import { ExecutionStreams } from '../executions/application/execution-streams.js';
import { ExecutionStreamsModule } from '../executions/execution-streams.module.js';
import { CheckpointStore } from '../postgres/checkpoint-store.js';
import { READ_MODEL_SQL, type SqlClient } from '../postgres/sql-client.port.js';
import { Watchdog, type WatchdogDeps, type WatchdogOptions } from './application/watchdog.js';
import { DeadlineTable } from './infrastructure/deadline-table.js';

/** Opens the watchdog's tables and builds it (not started). */
export async function createWatchdog(deps: Omit<WatchdogDeps, 'checkpoints' | 'deadlines'>, options?: WatchdogOptions): Promise<Watchdog> {
  const checkpoints = await CheckpointStore.open(deps.sql);
  const deadlines = await DeadlineTable.open(deps.sql);
  return new Watchdog({ ...deps, checkpoints, deadlines }, options);
}

/** Runs the watchdog while the module lives (the app imports the module when FLOSTRA_ROLES names the role). */
@Injectable()
export class WatchdogProcess implements OnModuleInit, OnModuleDestroy {
  private watchdog: Watchdog | null = null;

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(READ_MODEL_SQL) private readonly sql: SqlClient,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(ID_GENERATOR) private readonly ids: IdGenerator,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly executions: ExecutionStreams,
  ) {}

  async onModuleInit(): Promise<void> {
    const logger = this.logger.child({ component: 'watchdog' });
    this.watchdog = await createWatchdog({
      store: this.store,
      executions: this.executions,
      sql: this.sql,
      clock: this.clock,
      ids: this.ids,
      logger,
    });
    this.watchdog.start();
    logger.info('watchdog started');
  }

  async onModuleDestroy(): Promise<void> {
    await this.watchdog?.stop();
    this.watchdog = null;
  }
}

/** Needs the global EVENT_STORE, READ_MODEL_SQL, CLOCK, ID_GENERATOR and LOGGER providers. */
// ExecutionStreamsModule rather than ExecutionsModule keeps the API's module graph (controllers,
// read models) out of processes that only run this role.
@Module({ imports: [ExecutionStreamsModule], providers: [WatchdogProcess] })
export class WatchdogModule {}
