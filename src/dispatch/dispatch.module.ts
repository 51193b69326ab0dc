import { Inject, Injectable, Module, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { BUS, type Bus } from '../core/bus.port.js';
import type { Leadership } from '../core/leadership.js';
import { CLOCK, type Clock } from '../core/clock.port.js';
import { EVENT_STORE, type EventStore } from '../core/event-store.port.js';
import { LOGGER, type Logger } from '../core/logger.js';
import { METRICS, type Metrics } from '../core/metrics.port.js';
import { CheckpointStore } from '../postgres/checkpoint-store.js';
import { startLeaderRole } from '../postgres/leader-role.js';
import { READ_MODEL_SQL, type SqlClient } from '../postgres/sql-client.port.js';
import { Dispatcher, type DispatcherDeps, type DispatcherOptions } from './application/dispatcher.js';
import { DISPATCH_HAND_OVER, DispatchHandOver } from './dispatch-hand-over.js';
import { DispatchSchedule } from './infrastructure/dispatch-schedule.js';
import { UnclaimedDispatches } from './infrastructure/unclaimed-dispatches.js';

/** Opens the dispatcher's tables and builds it (not started). */
export async function createDispatcher(
  deps: Omit<DispatcherDeps, 'checkpoints' | 'schedule'>,
  options?: DispatcherOptions,
): Promise<Dispatcher> {
  const [checkpoints, schedule] = [await CheckpointStore.open(deps.sql), await DispatchSchedule.open(deps.sql)];
  // The in-process bus forgets everything on a restart; Kafka keeps what it acknowledged.
  const unclaimed = deps.bus.durable ? undefined : await UnclaimedDispatches.open(deps.sql);
  return new Dispatcher({ ...deps, checkpoints, schedule, unclaimed }, options);
}

/**
 * Runs the dispatcher while the module lives (the app imports the module when FLOSTRA_ROLES
 * names the role): in the one process of all that holds the `dispatcher` lease, its writes fenced
 * by the lease's epoch; the others stand by.
 */
@Injectable()
export class DispatcherProcess implements OnModuleInit, OnModuleDestroy {
  private leadership: Leadership | null = null;

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(BUS) private readonly bus: Bus,
    @Inject(READ_MODEL_SQL) private readonly sql: SqlClient,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(METRICS) private readonly metrics: Metrics,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(DISPATCH_HAND_OVER) private readonly handOver: DispatchHandOver,
  ) {}

  async onModuleInit(): Promise<void> {
    const logger = this.logger.child({ component: 'dispatcher' });
    const { store, bus, clock, metrics, handOver } = this;
    this.leadership = await startLeaderRole({
      role: 'dispatcher',
      sql: this.sql,
      logger,
      metrics,
      timings: this.config.leases,
      lead: async (sql) => {
        const dispatcher = await createDispatcher({ store, bus, sql, clock, logger, metrics, handOver });
        await dispatcher.start();
        logger.info('dispatcher started');
        return dispatcher;
      },
    });
  }

  /** Stops dispatching (the batch in hand is finished) and releases the lease. */
  async onModuleDestroy(): Promise<void> {
    await this.leadership?.stop();
    this.leadership = null;
  }
}

/** Needs the global APP_CONFIG, EVENT_STORE, BUS, READ_MODEL_SQL, CLOCK, LOGGER and METRICS providers. */
@Module({ providers: [DispatcherProcess] })
export class DispatchModule {}
