import { Module, type DynamicModule } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import type { TokenRegistry } from '../auth/token-registry.js';
import { ExecutionsModule } from '../executions/executions.module.js';
import { WorkflowsModule } from '../workflows/workflows.module.js';
import { CoreModule, type CoreDependencies } from './core.module.js';
import { HealthController } from './health.controller.js';

@Module({})
export class AppModule {
  static register(deps: CoreDependencies & { registry: TokenRegistry }): DynamicModule {
    return {
      module: AppModule,
      imports: [CoreModule.forRoot(deps), AuthModule.forRoot(deps.registry), WorkflowsModule, ExecutionsModule],
      controllers: [HealthController],
    };
  }
}
