import { Inject, Injectable } from '@nestjs/common';
import { CLOCK, type Clock } from '../../core/clock.port.js';
import { handleCommand } from '../../core/command-handler.js';
import { ValidationFailedError, type ValidationIssue } from '../../core/errors.js';
import { EVENT_STORE, type EventStore, type Position } from '../../core/event-store.port.js';
import { ID_GENERATOR, type IdGenerator } from '../../core/ids.js';
import { workflowDecider } from '../domain/workflow.decider.js';
import { parseWorkflowEvent, WORKFLOW_SCHEMA_VERSION } from '../domain/workflow.events.js';
import { workflowGraphDigest } from '../domain/workflow-digest.js';
import { parseWorkflowDefinition } from '../domain/workflow-graph.validation.js';
import { workflowIdOf, workflowNameSchema, workflowStreamId, workspaceIdSchema } from '../domain/workflow-identity.js';

export interface PublishWorkflowRequest {
  workspaceId: string;
  name: string;
  /** The parsed JSON body, untrusted. */
  body: unknown;
  /** Subject of the caller, recorded as `publishedBy`. Authorization is the caller's job. */
  actor: string;
}

export interface PublishWorkflowResponse {
  /** 201 when a new revision was published, 200 when the graph equals the latest revision. */
  status: 200 | 201;
  body: { workflowId: string; name: string; revision: number; digest: string };
  /** Global position of the revision's event. */
  position: Position;
}

/** `PUT /v1/workspaces/:workspaceId/workflows/:name`: validate, then one append (or none). */
@Injectable()
export class PublishWorkflowHandler {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(ID_GENERATOR) private readonly ids: IdGenerator,
  ) {}

  async execute(request: PublishWorkflowRequest): Promise<PublishWorkflowResponse> {
    const { workspaceId, name } = request;
    const issues: ValidationIssue[] = [];
    for (const [path, schema, value] of [['workspaceId', workspaceIdSchema, workspaceId], ['name', workflowNameSchema, name]] as const) {
      const result = schema.safeParse(value);
      if (!result.success) issues.push({ path, message: result.error.issues[0]!.message });
    }
    const definition = parseWorkflowDefinition(request.body);
    if (!definition.ok) issues.push(...definition.issues);
    // Promise 11 (docs/architecture.md): a bad graph is refused with every issue, before anything is read or written.
    if (issues.length > 0 || !definition.ok) {
      const first = issues[0]!;
      throw new ValidationFailedError(`invalid workflow: ${first.path || '(body)'}: ${first.message}`, issues);
    }

    const workflowId = workflowIdOf(workspaceId, name);
    const digest = workflowGraphDigest(definition.graph);
    const outcome = await handleCommand({
      store: this.store,
      streamId: workflowStreamId(workspaceId, name),
      decider: workflowDecider,
      parseEvent: parseWorkflowEvent,
      command: {
        type: 'PublishWorkflowRevision',
        data: { workspaceId, name, workflowId, graph: definition.graph, digest },
        metadata: { now: this.clock.now(), actor: request.actor },
      },
      // Random ids suffice: a repeated publish is absorbed by the digest check, and two racing
      // publishes are separated by the expected revision.
      eventId: () => this.ids.uuid(),
      metadata: { schemaVersion: WORKFLOW_SCHEMA_VERSION },
    });

    const state = outcome.state;
    if (state.status !== 'published') throw new Error('publishing left the workflow unpublished');
    const body = { workflowId, name, revision: state.latestRevision, digest: state.latestDigest };
    if (outcome.appended) return { status: 201, body, position: outcome.appended.position };
    const latest = outcome.history.findLast((event) => event.type === 'WorkflowRevisionPublished');
    if (!latest) throw new Error('a published workflow has no revision event');
    return { status: 200, body, position: latest.position };
  }
}
