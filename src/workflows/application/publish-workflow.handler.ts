import { Inject } from '@nestjs/common';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { type Principal, requireWorkspaceRole } from '../../auth/authorization.js';
import { CLOCK, type Clock } from '../../core/clock.port.js';
import { handleCommand } from '../../core/command-handler.js';
import { NotFoundError, ValidationFailedError } from '../../core/errors.js';
import { EVENT_STORE, type EventStore, type Position } from '../../core/event-store.port.js';
import { ID_GENERATOR, type IdGenerator } from '../../core/ids.js';
import { codeSyntaxIssues, type CodeSyntaxCheck } from '../domain/code-syntax.js';
import { workflowDecider } from '../domain/workflow.decider.js';
import { parseWorkflowEvent, WORKFLOW_SCHEMA_VERSION } from '../domain/workflow.events.js';
import { subworkflowCycle, subworkflowTargets, targetKey } from '../domain/subworkflow-cycles.js';
import { workflowGraphDigest } from '../domain/workflow-digest.js';
import type { WorkflowGraph } from '../domain/workflow-graph.schema.js';
import { parseWorkflowDefinition } from '../domain/workflow-graph.validation.js';
import { workflowIdOf, workflowStreamId } from '../domain/workflow-identity.js';
import { WorkflowQueries } from './workflow.queries.js';

export interface PublishWorkflowResult {
  /** 201 when a new revision was published, 200 when the graph equals the latest revision. */
  status: 200 | 201;
  body: { workflowId: string; name: string; revision: number; digest: string };
  /** Global position of the revision's event. */
  position: Position;
}

export class PublishWorkflowCommand extends Command<PublishWorkflowResult> {
  constructor(
    readonly principal: Principal,
    readonly workspaceId: string,
    readonly name: string,
    readonly graph: WorkflowGraph,
  ) {
    super();
  }
}

/**
 * A publish body as a normalized graph, or a ValidationFailedError listing every problem in it
 * (promise 11, docs/architecture.md: a bad graph is refused with every issue, before anything is read or written).
 */
export function parsePublishBody(body: unknown): WorkflowGraph {
  const definition = parseWorkflowDefinition(body);
  if (definition.ok) return definition.graph;
  const first = definition.issues[0];
  throw new ValidationFailedError(`invalid workflow: ${first?.path || '(body)'}: ${first?.message ?? 'invalid'}`, definition.issues);
}

/**
 * A ValidationFailedError when a `code` node's source does not compile (checked once the rest of
 * the graph is valid: compiling needs the interpreter, the other checks do not).
 */
export async function assertCodeCompiles(graph: WorkflowGraph, check: CodeSyntaxCheck): Promise<void> {
  const issues = await codeSyntaxIssues(graph, check);
  const first = issues[0];
  if (first !== undefined) throw new ValidationFailedError(`invalid workflow: ${first.path}: ${first.message}`, issues);
}

/**
 * A ValidationFailedError when a `subworkflow` node names the workflow being published (a
 * workflow never runs itself as its own child), a workflow (or revision) that is not published in
 * the workspace, or one that leads back to the workflow being published through the revisions its
 * nodes run (pinned, or the latest). A cycle published in a race (two workflows published at once,
 * each before the other) is refused by the executions instead: a child whose workflow already
 * runs above it fails its node.
 */
export async function assertSubworkflowsExist(
  workflows: WorkflowQueries,
  workspaceId: string,
  name: string,
  graph: WorkflowGraph,
): Promise<void> {
  for (const [index, node] of graph.nodes.entries()) {
    if (node.type !== 'subworkflow') continue;
    const path = `nodes[${index}].config.workflow`;
    const fail = (message: string) => new ValidationFailedError(`invalid workflow: ${path}: ${message}`, [{ path, message }]);
    if (node.config.workflow === name) throw fail('a workflow cannot run itself as a sub-workflow');
    try {
      await workflows.getRevision(workspaceId, node.config.workflow, node.config.revision);
    } catch (error) {
      if (error instanceof NotFoundError) throw fail(`${error.message} in this workspace`);
      throw error;
    }
  }
  const cycle = subworkflowCycle(name, graph, await reachableGraphs(workflows, workspaceId, name, graph));
  if (cycle === null) return;
  const path = `nodes[${cycle.index}].config.workflow`;
  const message = `a cycle of sub-workflows: ${cycle.path.join(' → ')}`;
  throw new ValidationFailedError(`invalid workflow: ${path}: ${message}`, [{ path, message }]);
}

/** Every workflow revision the graph's sub-workflows run, and theirs, once each (the one published is not read). */
async function reachableGraphs(
  workflows: WorkflowQueries,
  workspaceId: string,
  name: string,
  graph: WorkflowGraph,
): Promise<Map<string, WorkflowGraph>> {
  const graphs = new Map<string, WorkflowGraph>();
  const pending = subworkflowTargets(graph);
  for (let target = pending.pop(); target !== undefined; target = pending.pop()) {
    const key = targetKey(target);
    if (target.workflow === name || graphs.has(key)) continue;
    try {
      const found = await workflows.getRevision(workspaceId, target.workflow, target.revision);
      graphs.set(key, found.graph);
      pending.push(...subworkflowTargets(found.graph));
    } catch (error) {
      // Published before targets had to exist: it leads nowhere.
      if (!(error instanceof NotFoundError)) throw error;
    }
  }
  return graphs;
}

/** `PUT /v1/workspaces/:workspaceId/workflows/:name`: one append of a new revision, or none. */
@CommandHandler(PublishWorkflowCommand)
export class PublishWorkflowHandler implements ICommandHandler<PublishWorkflowCommand> {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(ID_GENERATOR) private readonly ids: IdGenerator,
  ) {}

  async execute({ principal, workspaceId, name, graph }: PublishWorkflowCommand): Promise<PublishWorkflowResult> {
    requireWorkspaceRole(principal, workspaceId, 'editor');
    await assertSubworkflowsExist(new WorkflowQueries(this.store), workspaceId, name, graph);
    const workflowId = workflowIdOf(workspaceId, name);
    const digest = workflowGraphDigest(graph);
    const outcome = await handleCommand({
      store: this.store,
      streamId: workflowStreamId(workspaceId, name),
      decider: workflowDecider,
      parseEvent: parseWorkflowEvent,
      command: {
        type: 'PublishWorkflowRevision',
        data: { workspaceId, name, workflowId, graph, digest },
        metadata: { now: this.clock.now(), actor: principal.subject },
      },
      // Random ids suffice: a repeated publish is absorbed by the digest check, and two racing
      // publishes are separated by the expected revision.
      eventId: () => this.ids.uuid(),
      // Who published, and for which workspace: readers of the global log (the audit trail) need
      // both without parsing the stream id.
      metadata: (_state, command) => ({ schemaVersion: WORKFLOW_SCHEMA_VERSION, actor: command.metadata.actor, workspaceId }),
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
