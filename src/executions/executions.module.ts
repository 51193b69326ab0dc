import { Module } from '@nestjs/common';
import { WorkflowsModule } from '../workflows/workflows.module.js';
import { SecretStreamsModule } from '../secrets/secret-streams.module.js';
import { WorkspaceStreamsModule } from '../workspaces/workspace-streams.module.js';
import { CancelExecutionHandler } from './application/cancel-execution.handler.js';
import { ClaimAttemptHandler } from './application/claim-attempt.handler.js';
import { CompleteAttemptHandler } from './application/complete-attempt.handler.js';
import { DecideApprovalHandler } from './application/decide-approval.handler.js';
import { GetExecutionHistoryHandler } from './application/get-execution-history.handler.js';
import { GetExecutionHandler } from './application/get-execution.handler.js';
import { HeartbeatAttemptHandler } from './application/heartbeat-attempt.handler.js';
import { ListExecutionsHandler } from './application/list-executions.handler.js';
import { RedriveExecutionHandler } from './application/redrive-execution.handler.js';
import { StartExecutionHandler } from './application/start-execution.handler.js';
import { SendSignalHandler } from './application/send-signal.handler.js';
import { ExecutionStreamsModule } from './execution-streams.module.js';
import { ExecutionsController } from './infrastructure/executions.controller.js';
import { WorkerProtocolController } from './infrastructure/worker-protocol.controller.js';

/** The executions API: controllers, and the handlers of its commands and queries (on the app's CQRS buses). */
@Module({
  imports: [WorkflowsModule, ExecutionStreamsModule, SecretStreamsModule, WorkspaceStreamsModule],
  controllers: [ExecutionsController, WorkerProtocolController],
  providers: [
    StartExecutionHandler,
    CancelExecutionHandler,
    RedriveExecutionHandler,
    DecideApprovalHandler,
    SendSignalHandler,
    ClaimAttemptHandler,
    HeartbeatAttemptHandler,
    CompleteAttemptHandler,
    GetExecutionHandler,
    GetExecutionHistoryHandler,
    ListExecutionsHandler,
  ],
  exports: [ExecutionStreamsModule],
})
export class ExecutionsModule {}
