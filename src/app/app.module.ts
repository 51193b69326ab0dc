import { Module, type DynamicModule } from '@nestjs/common';
import { AdminModule } from '../admin/admin.module.js';
import { AuthModule } from '../auth/auth.module.js';
import type { TokenRegistry } from '../auth/token-registry.js';
import { runsRole } from '../config/config.js';
import { ExecutionsModule } from '../executions/executions.module.js';
import { LiveModule } from '../live/live.module.js';
import { PgliteSqlClient } from '../postgres/pglite-sql-client.js';
import type { ProjectorOptions } from '../projector/projector.js';
import { ProjectorModule } from '../projector/projector.module.js';
import { WorkflowsModule } from '../workflows/workflows.module.js';
import { DispatchModule } from '../dispatch/dispatch.module.js';
import { IngestModule } from '../ingest/ingest.module.js';
import { WatchdogModule } from '../watchdog/watchdog.module.js';
import { OpenApiModule } from '../http/openapi/openapi.module.js';
import { CoreModule, type CoreDependencies } from './core.module.js';
import { HealthController } from './health.controller.js';

export interface AppDependencies extends CoreDependencies {
  registry: TokenRegistry;
  /** Projector tunables and test hooks (batch sizes, fault injection). */
  projector?: Partial<ProjectorOptions>;
}

@Module({})
export class AppModule {
  static register(deps: AppDependencies): DynamicModule {
    // An embedded PGlite belongs to this process alone: nobody else could keep its read models.
    const runProjector = runsRole(deps.config, 'projector') || deps.readModelSql instanceof PgliteSqlClient;
    return {
      module: AppModule,
      imports: [
        CoreModule.forRoot(deps),
        AuthModule.forRoot(deps.registry),
        ProjectorModule.forRoot({ run: runProjector, projector: { gatherMs: deps.config.projectorGatherMs, ...deps.projector } }),
        WorkflowsModule,
        ExecutionsModule,
        AdminModule,
        LiveModule,
        DispatchModule,
        IngestModule,
        WatchdogModule,
        OpenApiModule,
      ],
      controllers: [HealthController],
    };
  }
}
