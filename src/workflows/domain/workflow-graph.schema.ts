import { z } from 'zod';
import {
  approvalConfigSchema,
  codeConfigSchema,
  delayConfigSchema,
  failConfigSchema,
  httpConfigSchema,
  noopConfigSchema,
  switchConfigSchema,
  subworkflowConfigSchema,
  taskConfigSchema,
  transformConfigSchema,
  waitSignalConfigSchema,
} from './node-config.schema.js';
import { nodeIdSchema } from './workflow-identity.js';
import { MAX_NODE_TIMEOUT_MS, ONE_DAY_MS } from './workflow-graph.limits.js';

/**
 * The publish body of `PUT /v1/workspaces/:workspaceId/workflows/:name` (docs/api.md, "Workflows").
 * Parsing fills every default, so the output is the normalized graph that is digested, stored
 * and snapshotted into executions. Objects are strict: an unknown field is an error, not noise.
 */

/**
 * Workflow level: attempts of the whole execution. Node level: tries inside one attempt.
 * Both default to one try (no automatic retry).
 */
export const retryPolicySchema = z
  .strictObject({
    maxAttempts: z.number().int().min(1).max(100).default(1),
    initialIntervalMs: z.number().int().min(0).max(ONE_DAY_MS).default(1_000),
    backoffCoefficient: z.number().min(1).max(100).default(2),
    maxIntervalMs: z.number().int().min(0).max(ONE_DAY_MS).default(60_000),
    /** Error codes that are never retried, whatever maxAttempts says. A set: sorted, no duplicates. */
    nonRetryable: z
      .array(z.string().min(1).max(128))
      .max(100)
      .default([])
      .transform((codes) => [...new Set(codes)].sort()),
  })
  .refine((policy) => policy.maxIntervalMs >= policy.initialIntervalMs, {
    message: 'maxIntervalMs must be at least initialIntervalMs',
    path: ['maxIntervalMs'],
  });

export const timeoutsSchema = z.strictObject({
  /** How long a scheduled attempt may wait for a worker's claim. */
  queueMs: z.number().int().min(1_000).max(ONE_DAY_MS).default(300_000),
  /** Lease granted by a claim or a heartbeat; shorter leases detect dead workers sooner. */
  leaseMs: z.number().int().min(1_000).max(3_600_000).default(30_000),
  /** Wall-clock budget of the whole execution, retries included. */
  executionMs: z
    .number()
    .int()
    .min(1_000)
    .max(30 * ONE_DAY_MS)
    .default(ONE_DAY_MS),
});

/** When a node may run, given its predecessors' final states. */
export const triggerSchema = z.enum(['all_success', 'all_done', 'one_success']);

export const NODE_TYPES = [
  'noop',
  'delay',
  'transform',
  'code',
  'http',
  'approval',
  'fail',
  'task',
  'switch',
  'map',
  'subworkflow',
  'wait_signal',
] as const;

/** What every node has besides its id, type, config and trigger (a map's inner node has these too). */
const runFields = {
  retry: retryPolicySchema.prefault({}),
  /**
   * Wall-clock budget of each try of the node, enforced by the worker's DAG runner: at the
   * deadline the node's signal aborts and the try fails `node_timeout`. Absent: no bound but the
   * attempt's lease and the execution's timeout. No default, so graphs without it keep their digest.
   */
  timeoutMs: z.number().int().min(1).max(MAX_NODE_TIMEOUT_MS).optional(),
};

const nodeOf = <Type extends string, Config extends z.ZodType>(type: Type, config: Config) =>
  z.strictObject({
    id: nodeIdSchema,
    type: z.literal(type),
    config,
    ...runFields,
    trigger: triggerSchema.default('all_success'),
  });

/** The node types a `map` may run per item: those that run to their end inside the worker. */
export const MAP_INNER_NODE_TYPES = ['noop', 'transform', 'code', 'http', 'fail'] as const;

const innerNodeOf = <Type extends string, Config extends z.ZodType>(type: Type, config: Config) =>
  z.strictObject({ type: z.literal(type), config, ...runFields });

/** Most items one map runs; more fail the node with `map_too_large`. */
export const MAX_MAP_ITEMS = 10_000;

/**
 * `map`: runs `node` once per element of the array `items` evaluates to (a JSONata expression
 * over the map's input), at most `concurrency` at once. Waiting kinds (approval, task,
 * subworkflow, delay, wait_signal) and control-flow nodes cannot run per item.
 */
export const mapConfigSchema = z.strictObject({
  items: transformConfigSchema.shape.expression,
  node: z.discriminatedUnion(
    'type',
    [
      innerNodeOf('noop', noopConfigSchema.prefault({})),
      innerNodeOf('transform', transformConfigSchema),
      innerNodeOf('code', codeConfigSchema),
      innerNodeOf('http', httpConfigSchema),
      innerNodeOf('fail', failConfigSchema.prefault({})),
    ],
    {
      error: (issue) =>
        issue.code === 'invalid_union'
          ? `a map runs one of ${MAP_INNER_NODE_TYPES.join(', ')} per item (approval, task, subworkflow, delay and wait_signal nodes wait outside the worker)`
          : undefined,
    },
  ),
  concurrency: z.number().int().min(1).max(100).default(10),
});

export const workflowNodeSchema = z.discriminatedUnion(
  'type',
  [
    nodeOf('noop', noopConfigSchema.prefault({})),
    nodeOf('delay', delayConfigSchema),
    nodeOf('transform', transformConfigSchema),
    nodeOf('code', codeConfigSchema),
    nodeOf('http', httpConfigSchema),
    nodeOf('approval', approvalConfigSchema.prefault({})),
    nodeOf('fail', failConfigSchema.prefault({})),
    nodeOf('task', taskConfigSchema),
    nodeOf('switch', switchConfigSchema),
    nodeOf('map', mapConfigSchema),
    nodeOf('subworkflow', subworkflowConfigSchema),
    nodeOf('wait_signal', waitSignalConfigSchema),
  ],
  {
    error: (issue) => (issue.code === 'invalid_union' ? `unknown node type; expected one of ${NODE_TYPES.join(', ')}` : undefined),
  },
);

export const workflowEdgeSchema = z.strictObject({ from: nodeIdSchema, to: nodeIdSchema });

/** Counts and structure are checked by `validateGraphStructure`, which reports every problem at once. */
export const workflowGraphSchema = z.strictObject({
  nodes: z.array(workflowNodeSchema),
  edges: z.array(workflowEdgeSchema).default([]),
  retry: retryPolicySchema.prefault({}),
  timeouts: timeoutsSchema.prefault({}),
});

/** The publish body as a client may write it (defaults optional). */
export type WorkflowDefinition = z.input<typeof workflowGraphSchema>;
/** A validated graph with every default filled in: what is digested, stored and executed. */
export type WorkflowGraph = z.output<typeof workflowGraphSchema>;
export type WorkflowNode = WorkflowGraph['nodes'][number];
export type WorkflowEdge = WorkflowGraph['edges'][number];
export type NodeType = WorkflowNode['type'];
export type NodeOfType<Type extends NodeType> = Extract<WorkflowNode, { type: Type }>;
export type RetryPolicy = z.output<typeof retryPolicySchema>;
export type Timeouts = z.output<typeof timeoutsSchema>;
export type JoinTrigger = z.output<typeof triggerSchema>;
export type MapConfig = z.output<typeof mapConfigSchema>;
/** The node a map runs per item: a node without id or trigger. */
export type MapInnerNode = MapConfig['node'];
