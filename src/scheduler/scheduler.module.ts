import { Inject, Injectable, Module, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { CLOCK, type Clock } from '../core/clock.port.js';
import { EVENT_STORE, type EventStore } from '../core/event-store.port.js';
import { LOGGER, type Logger } from '../core/logger.js';
import { ExecutionStreams } from '../executions/application/execution-streams.js';
import { StartExecutionHandler } from '../executions/application/start-execution.handler.js';
import { ExecutionStreamsModule } from '../executions/execution-streams.module.js';
import { ScheduleStreams } from '../schedules/application/schedule-streams.js';
import { ScheduleStreamsModule } from '../schedules/schedule-streams.module.js';
import { SecretStreams } from '../secrets/application/secret-streams.js';
import { SecretStreamsModule } from '../secrets/secret-streams.module.js';
import { WorkflowQueries } from '../workflows/application/workflow.queries.js';
import { WorkspaceStreams } from '../workspaces/application/workspace-streams.js';
import { WorkspaceStreamsModule } from '../workspaces/workspace-streams.module.js';
import { Scheduler } from './application/scheduler.js';

/** Runs the scheduler while the module lives (the app imports the module with the scheduler role). */
@Injectable()
export class SchedulerProcess implements OnModuleInit, OnModuleDestroy {
  private scheduler: Scheduler | null = null;

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly schedules: ScheduleStreams,
    private readonly executions: ExecutionStreams,
    private readonly secrets: SecretStreams,
    private readonly workspaces: WorkspaceStreams,
  ) {}

  onModuleInit(): void {
    const logger = this.logger.child({ component: 'scheduler' });
    // The start command's own handler, not registered on the command bus a second time: a
    // scheduler-only process has no api, and one with the api role shares its streams.
    const start = new StartExecutionHandler(this.executions, new WorkflowQueries(this.store), this.secrets, this.workspaces);
    this.scheduler = new Scheduler({
      store: this.store,
      schedules: this.schedules,
      executions: this.executions,
      start: (command) => start.execute(command),
      clock: this.clock,
      logger,
    });
    this.scheduler.start();
    logger.info('scheduler started');
  }

  async onModuleDestroy(): Promise<void> {
    await this.scheduler?.stop();
    this.scheduler = null;
  }
}

/** Needs the global EVENT_STORE, CLOCK, ID_GENERATOR and LOGGER providers. */
@Module({
  imports: [ExecutionStreamsModule, SecretStreamsModule, WorkspaceStreamsModule, ScheduleStreamsModule],
  providers: [SchedulerProcess],
})
export class SchedulerModule {}
