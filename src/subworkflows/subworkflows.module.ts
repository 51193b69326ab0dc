import { Inject, Injectable, Module, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { CLOCK, type Clock } from '../core/clock.port.js';
import { EVENT_STORE, type EventStore } from '../core/event-store.port.js';
import { LOGGER, type Logger } from '../core/logger.js';
import { ExecutionStreams } from '../executions/application/execution-streams.js';
import { ExecutionStreamsModule } from '../executions/execution-streams.module.js';
import { CheckpointStore } from '../postgres/checkpoint-store.js';
import { READ_MODEL_SQL, type SqlClient } from '../postgres/sql-client.port.js';
import { WorkflowQueries } from '../workflows/application/workflow.queries.js';
import { APP_CONFIG, type AppConfig, DEFAULT_MAX_EXECUTIONS_PER_TREE } from '../config/config.js';
import { WorkspaceStreams } from '../workspaces/application/workspace-streams.js';
import { WorkspaceStreamsModule } from '../workspaces/workspace-streams.module.js';
import {
  SUBWORKFLOWS_ACTOR,
  SubworkflowManager,
  type SubworkflowManagerDeps,
  type SubworkflowManagerOptions,
} from './application/subworkflow-manager.js';
import { TreeStreams } from './application/tree-streams.js';
import { ChildLinks } from './infrastructure/child-links.js';

type ManagerDeps = Omit<SubworkflowManagerDeps, 'checkpoints' | 'links' | 'workflows' | 'trees' | 'workspaces' | 'maxExecutionsPerTree'>;

/**
 * Opens the manager's tables and builds it (not started). Without `workspaces` it reads them with
 * streams of its own; without `maxExecutionsPerTree`, the default of FLOSTRA_MAX_EXECUTIONS_PER_TREE.
 */
export async function createSubworkflowManager(
  deps: ManagerDeps & { sql: SqlClient; workspaces?: SubworkflowManagerDeps['workspaces']; maxExecutionsPerTree?: number },
  options?: SubworkflowManagerOptions,
): Promise<SubworkflowManager> {
  const checkpoints = await CheckpointStore.open(deps.sql);
  const links = await ChildLinks.open(deps.sql);
  return new SubworkflowManager(
    {
      ...deps,
      checkpoints,
      links,
      workflows: new WorkflowQueries(deps.store),
      trees: new TreeStreams(deps.store, deps.clock, SUBWORKFLOWS_ACTOR),
      workspaces: deps.workspaces ?? new WorkspaceStreams(deps.store, deps.clock, deps.executions.ids),
      maxExecutionsPerTree: deps.maxExecutionsPerTree ?? DEFAULT_MAX_EXECUTIONS_PER_TREE,
    },
    options,
  );
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
    private readonly workspaces: WorkspaceStreams,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async onModuleInit(): Promise<void> {
    const logger = this.logger.child({ component: 'subworkflows' });
    this.manager = await createSubworkflowManager({
      store: this.store,
      sql: this.sql,
      executions: this.executions,
      workspaces: this.workspaces,
      maxExecutionsPerTree: this.config.maxExecutionsPerTree,
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

/** Needs the global APP_CONFIG, EVENT_STORE, READ_MODEL_SQL, CLOCK, ID_GENERATOR and LOGGER providers. */
@Module({ imports: [ExecutionStreamsModule, WorkspaceStreamsModule], providers: [SubworkflowsProcess] })
export class SubworkflowsModule {}
