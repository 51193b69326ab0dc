import { Inject, Injectable, Module, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { CLOCK, type Clock } from '../core/clock.port.js';
import { EVENT_STORE, type EventStore } from '../core/event-store.port.js';
import { LOGGER, type Logger } from '../core/logger.js';
import { ExecutionStreams } from '../executions/application/execution-streams.js';
import { ExecutionStreamsModule } from '../executions/execution-streams.module.js';
import { CheckpointStore } from '../postgres/checkpoint-store.js';
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

/** Runs the admission while the module lives (the app imports the module with the dispatcher role). */
@Injectable()
export class AdmissionProcess implements OnModuleInit, OnModuleDestroy {
  private admission: Admission | null = null;

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(READ_MODEL_SQL) private readonly sql: SqlClient,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly executions: ExecutionStreams,
    private readonly workspaces: WorkspaceStreams,
  ) {}

  async onModuleInit(): Promise<void> {
    const logger = this.logger.child({ component: 'admission' });
    this.admission = await createAdmission({
      store: this.store,
      executions: this.executions,
      workspaces: this.workspaces,
      sql: this.sql,
      clock: this.clock,
      logger,
    });
    this.admission.start();
    logger.info('admission started');
  }

  async onModuleDestroy(): Promise<void> {
    await this.admission?.stop();
    this.admission = null;
  }
}

/** Needs the global EVENT_STORE, READ_MODEL_SQL, CLOCK, ID_GENERATOR and LOGGER providers. */
@Module({ imports: [ExecutionStreamsModule, WorkspaceStreamsModule], providers: [AdmissionProcess] })
export class AdmissionModule {}
