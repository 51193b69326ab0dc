import { Module } from '@nestjs/common';
import { WorkflowsModule } from '../workflows/workflows.module.js';
import { ExecutionQueries } from './application/execution.queries.js';
import { OperatorCommandsHandler } from './application/operator-commands.handler.js';
import { StartExecutionHandler } from './application/start-execution.handler.js';
import { WorkerProtocolHandler } from './application/worker-protocol.handler.js';
import { ExecutionsController } from './infrastructure/executions.controller.js';
import { WorkerProtocolController } from './infrastructure/worker-protocol.controller.js';
import { ExecutionRunnerModule } from './execution-runner.module.js';

@Module({
  imports: [WorkflowsModule, ExecutionRunnerModule],
  controllers: [ExecutionsController, WorkerProtocolController],
  providers: [StartExecutionHandler, OperatorCommandsHandler, WorkerProtocolHandler, ExecutionQueries],
  exports: [ExecutionRunnerModule, ExecutionQueries],
})
export class ExecutionsModule {}
