import { Module } from '@nestjs/common';
import { GetWorkflowHandler } from './application/get-workflow.handler.js';
import { PublishWorkflowHandler } from './application/publish-workflow.handler.js';
import { WorkflowQueries } from './application/workflow.queries.js';
import { CodeSyntaxChecker } from './infrastructure/code-syntax-checker.js';
import { WorkflowsController } from './infrastructure/workflows.controller.js';

@Module({
  controllers: [WorkflowsController],
  providers: [PublishWorkflowHandler, GetWorkflowHandler, WorkflowQueries, CodeSyntaxChecker],
  exports: [WorkflowQueries, PublishWorkflowHandler],
})
export class WorkflowsModule {}
