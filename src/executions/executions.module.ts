import { Module } from '@nestjs/common';
import { WorkflowsModule } from '../workflows/workflows.module.js';
import { ExecutionRunner } from './application/execution-runner.js';
import { ExecutionQueries } from './application/execution.queries.js';
import { OperatorCommandsHandler } from './application/operator-commands.handler.js';
import { StartExecutionHandler } from './application/start-execution.handler.js';
import { WorkerProtocolHandler } from './application/worker-protocol.handler.js';
import { ExecutionsController } from './infrastructure/executions.controller.js';
import { WorkerProtocolController } from './infrastructure/worker-protocol.controller.js';

@Module({
  imports: [WorkflowsModule],
  controllers: [ExecutionsController, WorkerProtocolController],
  providers: [ExecutionRunner, StartExecutionHandler, OperatorCommandsHandler, WorkerProtocolHandler, ExecutionQueries],
  exports: [ExecutionRunner, ExecutionQueries],
})
export class ExecutionsModule {}
