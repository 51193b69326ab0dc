import { z } from 'zod';
import { identifierField, positionField, timestampField } from '../../http/openapi/response-fields.js';
import { defineRoute, json, workspaceRole } from '../../http/openapi/route-contract.js';
import { nameSchema } from '../../http/validation.js';
import { workflowListQuerySchema, workflowRevisionQuerySchema } from '../application/request-schemas.js';
import { codeConfigSchema, failConfigSchema, httpConfigSchema, transformConfigSchema } from '../domain/node-config.schema.js';
import { retryPolicySchema, timeoutsSchema, workflowGraphSchema } from '../domain/workflow-graph.schema.js';
import { workflowEventSchemas } from '../domain/workflow.events.js';

/** Contracts of WorkflowsController (docs/api.md, "Workflows"). */

const TAGS = ['Workflows'];
const workflowParams = z.object({ workspaceId: nameSchema, name: nameSchema });
const published = workflowEventSchemas.WorkflowRevisionPublished.shape;

/**
 * How routes that show a workflow graph document it: by name, and with the sorting of
 * `nonRetryable` (a transform that keeps its type) shown as the array it is.
 */
export const workflowGraphDocumentation = {
  // Parts used by more than one node type (or by a node and a map's inner node) are named once.
  components: {
    WorkflowGraph: workflowGraphSchema,
    RetryPolicy: retryPolicySchema,
    Timeouts: timeoutsSchema,
    TransformConfig: transformConfigSchema,
    CodeConfig: codeConfigSchema,
    HttpConfig: httpConfigSchema,
    FailConfig: failConfigSchema,
  },
  typeKeepingTransforms: [retryPolicySchema.shape.nonRetryable],
};

/** What publishing answers: the revision that is now the latest, and where its event is. */
export const publishedWorkflowSchema = z
  .strictObject({
    workflowId: published.workflowId,
    name: published.name,
    revision: published.revision,
    digest: published.digest,
    position: positionField,
  })
  .meta({ id: 'PublishedWorkflow' });

/** `WorkflowQueries.getRevision`: the revision as published (its event's payload) and where its event is. */
export const workflowRevisionSchema = z.strictObject({ ...published, position: positionField }).meta({ id: 'WorkflowRevision' });

export const publishWorkflowContract = defineRoute({
  operationId: 'publishWorkflow',
  summary: 'Publish a revision of a workflow',
  description:
    'The graph is validated as a whole (unique node ids, known node types, edges between declared nodes, no cycles, size limits) and every problem is reported at once. ' +
    'Defaults are filled in; a graph equal to the latest revision’s answers that revision (200), any other becomes a new revision (201).',
  tags: TAGS,
  access: workspaceRole('editor', 'path'),
  params: workflowParams,
  body: workflowGraphSchema,
  responses: {
    201: json('A new revision was published.', publishedWorkflowSchema),
    200: json('The graph equals the latest revision, which is answered.', publishedWorkflowSchema),
  },
  errors: ['validation_failed', 'forbidden', 'not_found', 'concurrency_conflict', 'unavailable'],
  ...workflowGraphDocumentation,
});

export const getWorkflowContract = defineRoute({
  operationId: 'getWorkflow',
  summary: 'Get a workflow revision',
  description: 'The latest revision, or `revision`. Read from the workflow’s stream: always current.',
  tags: TAGS,
  access: workspaceRole('viewer', 'path'),
  params: workflowParams,
  query: workflowRevisionQuerySchema,
  responses: { 200: json('The revision, with its normalized graph.', workflowRevisionSchema) },
  errors: ['validation_failed', 'not_found', 'unavailable'],
  ...workflowGraphDocumentation,
});

const workflowSummarySchema = z
  .strictObject({
    name: identifierField.meta({ description: 'The workflow’s name.' }),
    revision: published.revision,
    digest: published.digest,
    publishedBy: z.string().min(1).meta({ description: 'Who published the latest revision.' }),
    publishedAt: timestampField,
    position: positionField,
  })
  .meta({ id: 'WorkflowSummary' });

export const listWorkflowsContract = defineRoute({
  operationId: 'listWorkflows',
  summary: 'List a workspace’s workflows',
  description:
    'Every workflow of the workspace by name, with its latest revision. Reads are read-your-writes: the query first waits (bounded) until ' +
    'the read model reflects every write acknowledged before it arrived; `minPosition` (or X-Flostra-Min-Position) waits only for that position, ' +
    '`consistency=eventual` does not wait.',
  tags: TAGS,
  access: workspaceRole('viewer', 'path'),
  params: z.object({ workspaceId: nameSchema }),
  query: workflowListQuerySchema,
  headers: z.object({ 'X-Flostra-Min-Position': z.string().optional() }),
  responses: {
    200: json('The workflows, by name.', z.strictObject({ items: z.array(workflowSummarySchema) }).meta({ id: 'WorkflowList' })),
  },
  errors: ['validation_failed', 'not_found', 'unavailable'],
});
