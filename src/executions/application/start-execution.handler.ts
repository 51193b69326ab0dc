import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { type Principal, requireWorkspaceRole } from '../../auth/authorization.js';
import { sha256OfCanonical } from '../../core/canonical-json.js';
import { NotFoundError, SecretNotFoundError } from '../../core/errors.js';
import { uuidV5 } from '../../core/ids.js';
import { SecretStreams } from '../../secrets/application/secret-streams.js';
import { referencedSecretNames } from '../../workflows/domain/secret-references.js';
import { WorkflowQueries } from '../../workflows/application/workflow.queries.js';
import { WorkspaceStreams } from '../../workspaces/application/workspace-streams.js';
import type { RecordedEvent } from '../../core/event-store.port.js';
import { ExecutionStreams } from './execution-streams.js';
import type { StartExecutionBody } from './request-schemas.js';
import type { ScheduledBy } from '../domain/execution.events.js';
import { scheduledExecutionId } from '../domain/scheduled-execution-id.js';

export interface StartExecutionResult {
  /** True when an earlier start with the same Idempotency-Key and body answered: nothing new was appended. */
  replayed: boolean;
  body: { executionId: string; workflowRevision: number; status: 'queued'; position: string };
}

export class StartExecutionCommand extends Command<StartExecutionResult> {
  constructor(
    readonly principal: Principal,
    readonly workspaceId: string,
    readonly workflowName: string,
    readonly idempotencyKey: string | undefined,
    readonly body: StartExecutionBody,
    /** A schedule fire: the execution id is derived from it, and starting the same fire again is a replay. */
    readonly scheduledBy: ScheduledBy | null = null,
  ) {
    super();
  }
}

/**
 * Starts an execution of a published revision: one append of ExecutionStarted and its first
 * attempt (or, when its first runnable nodes are all plain task nodes, their tasks), or, in a
 * workspace with a concurrency bound, of ExecutionStarted and ExecutionAwaitingSlot (the admission
 * schedules the attempt or the tasks once a slot is granted).
 */
@CommandHandler(StartExecutionCommand)
export class StartExecutionHandler implements ICommandHandler<StartExecutionCommand> {
  constructor(
    private readonly executions: ExecutionStreams,
    private readonly workflows: WorkflowQueries,
    private readonly secrets: SecretStreams,
    private readonly workspaces: WorkspaceStreams,
  ) {}

  async execute({
    principal,
    workspaceId,
    workflowName,
    idempotencyKey: key,
    body,
    scheduledBy,
  }: StartExecutionCommand): Promise<StartExecutionResult> {
    requireWorkspaceRole(principal, workspaceId, 'operator');
    const [workflow, { state: workspace }] = await Promise.all([
      this.workflows.getRevision(workspaceId, workflowName, body.revision),
      this.workspaces.settings(workspaceId),
    ]);
    // Promise 2 (docs/architecture.md): the key names the execution, so concurrent duplicates meet at one stream and
    // its expected revision lets exactly one ExecutionStarted in.
    // A schedule fire names its execution the same way (in a namespace no key reaches), so a second scheduler's start is a replay.
    const executionId = scheduledBy
      ? scheduledExecutionId(workspaceId, scheduledBy.schedule, scheduledBy.fireTime)
      : key
        ? uuidV5(`execution:${workspaceId}:${key}`)
        : this.executions.ids.uuid();
    const derived = key !== undefined || scheduledBy !== null;
    const idempotency = key ? { key, fingerprint: sha256OfCanonical({ workflow: workflowName, body }) } : null;
    // Secrets the graph references must exist now (a replay of an earlier start answers as it did).
    const missing = await this.secrets.missing(workspaceId, referencedSecretNames(workflow.graph));
    if (missing.length > 0 && !(derived && (await this.started(executionId)))) throw new SecretNotFoundError(missing);
    const outcome = await this.executions.handle(
      executionId,
      {
        type: 'StartExecution',
        data: {
          executionId,
          workspaceId,
          workflow: {
            workflowId: workflow.workflowId,
            name: workflow.name,
            revision: workflow.revision,
            digest: workflow.digest,
            graph: workflow.graph,
          },
          input: body.input ?? {},
          idempotency,
          attemptId: this.executions.ids.uuid(),
          waitFor: workspace.settings.maxConcurrentExecutions === null ? null : 'workspace_quota',
          scheduledBy,
        },
        metadata: { now: this.executions.clock.now(), actor: principal.subject },
      },
      derived ? { eventIds: (index) => uuidV5(`${executionId}:start:${index}`) } : { newStream: true },
    );
    const state = outcome.state;
    if (state.status === 'not_started') throw new Error('start left no execution');
    const position = outcome.appended?.position ?? startPosition(outcome.history);
    return {
      replayed: outcome.appended === null,
      body: { executionId, workflowRevision: state.workflow.revision, status: 'queued', position },
    };
  }

  private async started(executionId: string): Promise<boolean> {
    try {
      await this.executions.load(executionId);
      return true;
    } catch (error) {
      if (error instanceof NotFoundError) return false;
      throw error;
    }
  }
}

/**
 * Where the start's own append ended, for a replay to answer as the start did: its first attempt,
 * its wait for a slot, or the last of the root tasks it scheduled instead of an attempt.
 */
function startPosition(history: readonly RecordedEvent[]): string {
  let last = history[0];
  for (const event of history.slice(1)) {
    if (event.type === 'AttemptScheduled' || event.type === 'ExecutionAwaitingSlot') return event.position;
    if (event.type !== 'TaskScheduled') break;
    last = event;
  }
  if (last === undefined) throw new Error('replayed command has no recorded event to answer from');
  return last.position;
}
