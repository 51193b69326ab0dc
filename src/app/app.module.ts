import { Module, type DynamicModule, type Type } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { PROJECTION_DEFINITIONS } from '../../projections/projections.registry.js';
import { ReadModelsModule } from '../../projections/read-models.module.js';
import { AdminModule } from '../admin/admin.module.js';
import { AuditModule } from '../audit/audit.module.js';
import { AdmissionModule } from '../admission/admission.module.js';
import { SubworkflowsModule } from '../subworkflows/subworkflows.module.js';
import { AuthModule } from '../auth/auth.module.js';
import { SessionsModule } from '../auth/sessions.module.js';
import type { TokenRegistry } from '../auth/token-registry.js';
import { type AppConfig, runsRole } from '../config/config.js';
import { DispatchModule } from '../dispatch/dispatch.module.js';
import { ExecutionsModule } from '../executions/executions.module.js';
import { IngestModule } from '../ingest/ingest.module.js';
import { LiveModule } from '../live/live.module.js';
import type { SqlClient } from '../postgres/sql-client.port.js';
import type { ProjectorOptions } from '../projector/projector.js';
import { ProjectorModule } from '../projector/projector.module.js';
import { WatchdogModule } from '../watchdog/watchdog.module.js';
import { RetentionModule } from '../retention/retention.module.js';
import { SchedulerModule } from '../scheduler/scheduler.module.js';
import { SchedulesModule } from '../schedules/schedules.module.js';
import { TasksModule } from '../tasks/tasks.module.js';
import { TimersModule } from '../timers/timers.module.js';
import { WorkflowsModule } from '../workflows/workflows.module.js';
import { SecretsModule } from '../secrets/secrets.module.js';
import { WorkspacesModule } from '../workspaces/workspaces.module.js';
import { OpenApiModule } from '../http/openapi/openapi.module.js';
import { MetricsController, TokenMetricsController } from '../observability/metrics.controller.js';
import { CoreModule, type CoreDependencies } from './core.module.js';
import { HealthController } from './health.controller.js';

export interface AppDependencies extends CoreDependencies {
  registry: TokenRegistry;
  /** Projector tunables and test hooks (batch sizes, fault injection). */
  projector?: Partial<ProjectorOptions>;
}

/**
 * The one place that turns FLOSTRA_ROLES into modules: a module runs its process while it
 * lives, so a role's module is imported only when the role is. (The worker role is no module:
 * main.ts starts it beside the app, calling the api in process or over HTTP.)
 */
export function roleModules(config: AppConfig): Type[] {
  const modules: Type[] = [];
  if (runsRole(config, 'api'))
    modules.push(
      WorkflowsModule,
      ExecutionsModule,
      AdminModule,
      LiveModule,
      SecretsModule,
      AuditModule,
      WorkspacesModule,
      SchedulesModule,
      SessionsModule,
    );
  // The dispatcher role also admits executions of workspaces with a concurrency bound, and starts and follows child executions.
  if (runsRole(config, 'api')) modules.push(TasksModule);
  if (runsRole(config, 'dispatcher')) modules.push(DispatchModule, AdmissionModule, SubworkflowsModule);
  if (runsRole(config, 'ingestor')) modules.push(IngestModule);
  if (runsRole(config, 'watchdog')) modules.push(WatchdogModule);
  if (runsRole(config, 'watchdog') && config.retentionDays !== null) modules.push(RetentionModule);
  if (runsRole(config, 'scheduler')) modules.push(SchedulerModule);
  if (runsRole(config, 'timer')) modules.push(TimersModule);
  return modules;
}

/**
 * Whether this process runs the projector: FLOSTRA_ROLES names it, or the read models live in a
 * database that runs inside this process (embedded PGlite), which nobody else could keep.
 */
export function runsProjector(config: AppConfig, readModelSql: SqlClient): boolean {
  return runsRole(config, 'projector') || readModelSql.inProcess === true;
}

@Module({})
export class AppModule {
  static register(deps: AppDependencies): DynamicModule {
    return {
      module: AppModule,
      imports: [
        CoreModule.forRoot(deps),
        // HTTP commands and queries travel on its CommandBus and QueryBus; no sagas or event
        // handlers: effects run from checkpointed subscriptions of the log, which survive a crash.
        CqrsModule.forRoot(),
        AuthModule.forRoot(deps.registry),
        ProjectorModule.forRoot({
          definitions: PROJECTION_DEFINITIONS,
          run: runsProjector(deps.config, deps.readModelSql),
          projector: { gatherMs: deps.config.projectorGatherMs, ...deps.projector },
        }),
        ReadModelsModule,
        ...roleModules(deps.config),
        OpenApiModule,
      ],
      // GET /metrics here, unless FLOSTRA_METRICS_PORT gives it a listener of its own (main.ts).
      controllers:
        deps.config.metricsPort !== null
          ? [HealthController]
          : [HealthController, deps.config.metricsAuth === 'token' ? TokenMetricsController : MetricsController],
    };
  }
}
