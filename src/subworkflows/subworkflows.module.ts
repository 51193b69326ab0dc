import { Inject, Injectable, Module, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { CLOCK, type Clock } from '../core/clock.port.js';
import { EVENT_STORE, type EventStore } from '../core/event-store.port.js';
import { LOGGER, type Logger } from '../core/logger.js';
import { ExecutionStreams } from '../executions/application/execution-streams.js';
import { ExecutionStreamsModule } from '../executions/execution-streams.module.js';
import { CheckpointStore } from '../postgres/checkpoint-store.js';
import { READ_MODEL_SQL, type SqlClient } from '../postgres/sql-client.port.js';
import { WorkflowQueries } from '../workflows/application/workflow.queries.js';
import { SubworkflowManager, type SubworkflowManagerDeps, type SubworkflowManagerOptions } from './application/subworkflow-manager.js';
import { ChildLinks } from './infrastructure/child-links.js';

/** Opens the manager's tables and builds it (not started). */
export async function createSubworkflowManager(
  deps: Omit<SubworkflowManagerDeps, 'checkpoints' | 'links' | 'workflows'> & { sql: SqlClient },
  options?: SubworkflowManagerOptions,
): Promise<SubworkflowManager> {
  const checkpoints = await CheckpointStore.open(deps.sql);
  const links = await ChildLinks.open(deps.sql);
  return new SubworkflowManager({ ...deps, checkpoints, links, workflows: new WorkflowQueries(deps.store) }, options);
}

/** Runs the subworkflow manager while the module lives (the app imports the module with the dispatcher role). */
@Injectable()
export class SubworkflowsProcess implements OnModuleInit, OnModuleDestroy {
  private manager: SubworkflowManager | null = null;

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(READ_MODEL_SQL) private readonly sql: SqlClient,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly executions: ExecutionStreams,
  ) {}

  async onModuleInit(): Promise<void> {
    const logger = this.logger.child({ component: 'subworkflows' });
    this.manager = await createSubworkflowManager({
      store: this.store,
      sql: this.sql,
      executions: this.executions,
      clock: this.clock,
      logger,
    });
    this.manager.start();
    logger.info('subworkflow manager started');
  }

  async onModuleDestroy(): Promise<void> {
    await this.manager?.stop();
    this.manager = null;
  }
}

/** Needs the global EVENT_STORE, READ_MODEL_SQL, CLOCK, ID_GENERATOR and LOGGER providers. */
@Module({ imports: [ExecutionStreamsModule], providers: [SubworkflowsProcess] })
export class SubworkflowsModule {}
