import { Inject, Injectable, Module, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { CLOCK, type Clock } from '../core/clock.port.js';
import type { Leadership } from '../core/leadership.js';
import { METRICS, type Metrics } from '../core/metrics.port.js';
import { EVENT_STORE, type EventStore } from '../core/event-store.port.js';
import { ID_GENERATOR, type IdGenerator } from '../core/ids.js';
import { LOGGER, type Logger } from '../core/logger.js';
import { ExecutionStreams } from '../executions/application/execution-streams.js';
import { ExecutionStreamsModule } from '../executions/execution-streams.module.js';
import { CheckpointStore } from '../postgres/checkpoint-store.js';
import { startLeaderRole } from '../postgres/leader-role.js';
import { READ_MODEL_SQL, type SqlClient } from '../postgres/sql-client.port.js';
import { Watchdog, type WatchdogDeps, type WatchdogOptions } from './application/watchdog.js';
import { DeadlineTable } from './infrastructure/deadline-table.js';

/** Opens the watchdog's tables and builds it (not started). */
export async function createWatchdog(deps: Omit<WatchdogDeps, 'checkpoints' | 'deadlines'>, options?: WatchdogOptions): Promise<Watchdog> {
  const checkpoints = await CheckpointStore.open(deps.sql);
  const deadlines = await DeadlineTable.open(deps.sql);
  return new Watchdog({ ...deps, checkpoints, deadlines }, options);
}

/**
 * Runs the watchdog while the module lives (the app imports the module when FLOSTRA_ROLES names
 * the role): in the one process of all that holds the `watchdog` lease, its table writes fenced by
 * the lease's epoch; the others stand by. Its commands need no fence: the decider refuses any
 * that no longer applies, and each is one append at the stream's expected revision.
 */
@Injectable()
export class WatchdogProcess implements OnModuleInit, OnModuleDestroy {
  private leadership: Leadership | null = null;

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(READ_MODEL_SQL) private readonly sql: SqlClient,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(ID_GENERATOR) private readonly ids: IdGenerator,
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(METRICS) private readonly metrics: Metrics,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly executions: ExecutionStreams,
  ) {}

  async onModuleInit(): Promise<void> {
    const logger = this.logger.child({ component: 'watchdog' });
    const { store, executions, clock, ids } = this;
    this.leadership = await startLeaderRole({
      role: 'watchdog',
      sql: this.sql,
      logger,
      metrics: this.metrics,
      timings: this.config.leases,
      lead: async (sql) => {
        const watchdog = await createWatchdog({ store, executions, sql, clock, ids, logger });
        watchdog.start();
        logger.info('watchdog started');
        return watchdog;
      },
    });
  }

  /** Stops the watchdog (the batch in hand is finished) and releases the lease. */
  async onModuleDestroy(): Promise<void> {
    await this.leadership?.stop();
    this.leadership = null;
  }
}

/** Needs the global APP_CONFIG, EVENT_STORE, READ_MODEL_SQL, CLOCK, ID_GENERATOR, LOGGER and METRICS providers. */
// ExecutionStreamsModule rather than ExecutionsModule keeps the API's module graph (controllers,
// read models) out of processes that only run this role.
@Module({ imports: [ExecutionStreamsModule], providers: [WatchdogProcess] })
export class WatchdogModule {}
