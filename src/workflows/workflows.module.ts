import { Module } from '@nestjs/common';
import { GetWorkflowHandler } from './application/get-workflow.handler.js';
import { PublishWorkflowHandler } from './application/publish-workflow.handler.js';
import { WorkflowQueries } from './application/workflow.queries.js';
import { CodeSyntaxChecker } from './infrastructure/code-syntax-checker.js';
import { ListWorkflowsHandler } from './application/list-workflows.handler.js';
import { WorkflowListController, WorkflowsController } from './infrastructure/workflows.controller.js';

@Module({
  controllers: [WorkflowsController, WorkflowListController],
  providers: [PublishWorkflowHandler, GetWorkflowHandler, ListWorkflowsHandler, WorkflowQueries, CodeSyntaxChecker],
  exports: [WorkflowQueries, PublishWorkflowHandler],
})
export class WorkflowsModule {}
