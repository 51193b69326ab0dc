import { Injectable } from '@nestjs/common';
import { sha256OfCanonical } from '../../core/canonical-json.js';
import { uuidV5 } from '../../core/ids.js';
import { type Principal, requireWorkspaceRole } from '../../auth/authorization.js';
import { parseBody } from '../../http/validation.js';
import { WorkflowQueries } from '../../workflows/application/workflow.queries.js';
import { ExecutionRunner, positionOf } from './execution-runner.js';
import { idempotencyKeySchema, startExecutionBodySchema } from './request-schemas.js';

export interface StartExecutionRequest {
  principal: Principal;
  workspaceId: string;
  workflowName: string;
  idempotencyKey: string | undefined;
  body: unknown;
}

export interface StartExecutionResponse {
  executionId: string;
  workflowRevision: number;
  status: 'queued';
  position: string;
}

@Injectable()
export class StartExecutionHandler {
  constructor(
    private readonly runner: ExecutionRunner,
    private readonly workflows: WorkflowQueries,
  ) {}

  async execute(request: StartExecutionRequest): Promise<{ replayed: boolean; body: StartExecutionResponse }> {
    const { principal, workspaceId, workflowName } = request;
    requireWorkspaceRole(principal, workspaceId, 'operator');
    const body = parseBody(startExecutionBodySchema, request.body);
    const key = request.idempotencyKey === undefined ? undefined : parseBody(idempotencyKeySchema, request.idempotencyKey, 'Idempotency-Key');
    const workflow = await this.workflows.getRevision(workspaceId, workflowName, body.revision);
    // Promise 2 (docs/architecture.md): the key names the execution, so concurrent duplicates meet at one stream and
    // its expected revision lets exactly one ExecutionStarted in.
    const executionId = key ? uuidV5(`execution:${workspaceId}:${key}`) : this.runner.ids.uuid();
    const idempotency = key ? { key, fingerprint: sha256OfCanonical({ workflow: workflowName, body }) } : null;
    const outcome = await this.runner.run(
      executionId,
      {
        type: 'StartExecution',
        data: {
          executionId,
          workspaceId,
          workflow: { workflowId: workflow.workflowId, name: workflow.name, revision: workflow.revision, digest: workflow.digest, graph: workflow.graph },
          input: body.input ?? {},
          idempotency,
          attemptId: this.runner.ids.uuid(),
        },
        metadata: { now: this.runner.clock.now(), actor: principal.subject },
      },
      key ? { eventIds: (index) => uuidV5(`${executionId}:start:${index}`) } : { newStream: true },
    );
    const state = outcome.state;
    if (state.status === 'not_started') throw new Error('start left no execution');
    const position = outcome.appended?.position ?? positionOf(outcome.history, (e) => e.type === 'AttemptScheduled');
    return {
      replayed: outcome.appended === null,
      body: { executionId, workflowRevision: state.workflow.revision, status: 'queued', position },
    };
  }
}
