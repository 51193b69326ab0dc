import { Inject, Injectable, Module, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { CLOCK, type Clock } from '../core/clock.port.js';
import { EVENT_STORE, type EventStore } from '../core/event-store.port.js';
import { ID_GENERATOR, type IdGenerator } from '../core/ids.js';
import { LOGGER, type Logger } from '../core/logger.js';
import { runTicker } from '../core/ticker.js';
import { ExecutionStreams } from '../executions/application/execution-streams.js';
import { ExecutionStreamsModule } from '../executions/execution-streams.module.js';
import { READ_MODEL_SQL, type SqlClient } from '../postgres/sql-client.port.js';
import { RetentionHorizon } from './application/retention-horizon.js';
import { sweepRetention } from './application/retention-sweep.js';
import { readModelCandidates } from './infrastructure/read-model-candidates.js';

/** How often a process with the watchdog role sweeps (and once at its start). */
export const RETENTION_SWEEP_INTERVAL_MS = 10 * 60 * 1000;

/**
 * Runs retention's sweep while the module lives: the app imports it with the watchdog role when
 * FLOSTRA_RETENTION_DAYS is set. Replicas may sweep at once (see sweepRetention).
 */
@Injectable()
export class RetentionProcess implements OnModuleInit, OnModuleDestroy {
  private readonly stopping = new AbortController();
  private running: Promise<void> | null = null;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(READ_MODEL_SQL) private readonly sql: SqlClient,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(ID_GENERATOR) private readonly ids: IdGenerator,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly executions: ExecutionStreams,
  ) {}

  onModuleInit(): void {
    const days = this.config.retentionDays;
    if (days === null) return;
    const log = this.logger.child({ component: 'retention' });
    const deps = {
      store: this.store,
      executions: this.executions,
      candidates: readModelCandidates(this.sql),
      horizon: new RetentionHorizon(this.store),
      clock: this.clock,
      ids: this.ids,
      days,
    };
    this.running = runTicker(this.stopping.signal, {
      tickMs: RETENTION_SWEEP_INTERVAL_MS,
      tick: async () => {
        const report = await sweepRetention(deps);
        if (report.facts > 0) log.info('retention sweep deleted ended executions', { ...report });
        return false;
      },
      onError: (error, failures) => log.warn('retention sweep failed; trying again', { error: String(error), failures }),
    });
  }

  async onModuleDestroy(): Promise<void> {
    this.stopping.abort();
    await this.running;
  }
}

/** Needs the global APP_CONFIG, EVENT_STORE, READ_MODEL_SQL, CLOCK, ID_GENERATOR and LOGGER providers. */
@Module({ imports: [ExecutionStreamsModule], providers: [RetentionProcess] })
export class RetentionModule {}
