import { Inject, Injectable, Module, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { CLOCK, type Clock } from '../core/clock.port.js';
import type { Leadership } from '../core/leadership.js';
import { METRICS, type Metrics } from '../core/metrics.port.js';
import { EVENT_STORE, type EventStore } from '../core/event-store.port.js';
import { LOGGER, type Logger } from '../core/logger.js';
import { ExecutionStreams } from '../executions/application/execution-streams.js';
import { ExecutionStreamsModule } from '../executions/execution-streams.module.js';
import { CheckpointStore } from '../postgres/checkpoint-store.js';
import { startLeaderRole } from '../postgres/leader-role.js';
import { READ_MODEL_SQL, type SqlClient } from '../postgres/sql-client.port.js';
import { WorkspaceStreams } from '../workspaces/application/workspace-streams.js';
import { WorkspaceStreamsModule } from '../workspaces/workspace-streams.module.js';
import { Admission, type AdmissionDeps, type AdmissionOptions } from './application/admission.js';
import { AdmissionQueue } from './infrastructure/admission-queue.js';

/** Opens the admission's tables and builds it (not started). */
export async function createAdmission(deps: Omit<AdmissionDeps, 'checkpoints' | 'queue'>, options?: AdmissionOptions): Promise<Admission> {
  const checkpoints = await CheckpointStore.open(deps.sql);
  const queue = await AdmissionQueue.open(deps.sql);
  return new Admission({ ...deps, checkpoints, queue }, options);
}

/**
 * Runs the admission while the module lives (the app imports the module with the dispatcher
 * role): in the one process that holds the `admission` lease, its queue writes fenced by the
 * lease's epoch; the others stand by.
 */
@Injectable()
export class AdmissionProcess implements OnModuleInit, OnModuleDestroy {
  private leadership: Leadership | null = null;

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(READ_MODEL_SQL) private readonly sql: SqlClient,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly executions: ExecutionStreams,
    private readonly workspaces: WorkspaceStreams,
    @Inject(METRICS) private readonly metrics: Metrics,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async onModuleInit(): Promise<void> {
    const logger = this.logger.child({ component: 'admission' });
    const { store, executions, workspaces, clock } = this;
    this.leadership = await startLeaderRole({
      role: 'admission',
      sql: this.sql,
      logger,
      metrics: this.metrics,
      timings: this.config.leases,
      lead: async (sql) => {
        const admission = await createAdmission({ store, executions, workspaces, sql, clock, logger });
        admission.start();
        logger.info('admission started');
        return admission;
      },
    });
  }

  /** Stops the admission and releases the lease. */
  async onModuleDestroy(): Promise<void> {
    await this.leadership?.stop();
    this.leadership = null;
  }
}

/** Needs the global APP_CONFIG, EVENT_STORE, READ_MODEL_SQL, CLOCK, LOGGER and METRICS providers. */
@Module({ imports: [ExecutionStreamsModule, WorkspaceStreamsModule], providers: [AdmissionProcess] })
export class AdmissionModule {}
