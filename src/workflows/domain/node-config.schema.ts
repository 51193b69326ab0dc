import { z } from 'zod';
import { nodeIdSchema } from './workflow-identity.js';
import { MAX_CODE_SOURCE_BYTES, MAX_EXPRESSION_BYTES, ONE_DAY_MS } from './workflow-graph.limits.js';

/** Per-type configuration of a node. Only shape is checked here; workers interpret it. */

const utf8Bytes = (text: string) => new TextEncoder().encode(text).length;

export const noopConfigSchema = z.strictObject({});

/**
 * A durable wait: `ms` from when the node is reached, or until an absolute time (`until`,
 * ISO-8601 with an offset). The control plane records the due time once; no worker waits.
 */
export const delayConfigSchema = z
  .strictObject({
    ms: z.number().int().min(0).max(ONE_DAY_MS).optional(),
    until: z.iso.datetime({ offset: true }).optional(),
  })
  .refine((config) => (config.ms === undefined) !== (config.until === undefined), 'a delay takes either ms or until');

/** Signal names: they travel in URL paths (`POST /v1/executions/:id/signals/:name`). */
export const SIGNAL_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
export const signalNameSchema = z
  .string()
  .regex(SIGNAL_NAME_PATTERN, 'a signal name is 1-64 characters of A-Z, a-z, 0-9, ".", "_" or "-", starting with a letter or digit');

/**
 * Waits for a signal of `name` sent to the execution (kept if it came first); the node's output
 * is its payload. `timeoutMs` fails the node `signal_timeout` when none arrives in time.
 */
export const waitSignalConfigSchema = z.strictObject({
  name: signalNameSchema,
  timeoutMs: z
    .number()
    .int()
    .min(1)
    .max(30 * ONE_DAY_MS)
    .optional(),
});

/** A JSONata expression over the node's input, evaluated by the worker (never `eval`). */
export const transformConfigSchema = z.strictObject({
  expression: z
    .string()
    .refine((text) => text.trim().length > 0, 'an expression is required')
    .refine((text) => utf8Bytes(text) <= MAX_EXPRESSION_BYTES, `an expression is at most ${MAX_EXPRESSION_BYTES} bytes`),
});

/**
 * JavaScript run by the worker in a WebAssembly interpreter with no host access: `source` is the
 * body of a function of `input` that returns a JSON value. `timeoutMs` and `memoryMb` bound one
 * run of it (the interpreter's own time and memory limits; the node-level `timeoutMs` bounds the
 * whole try, waiting for an interpreter included).
 */
export const codeConfigSchema = z.strictObject({
  language: z.literal('javascript', { error: 'the only language is "javascript"' }),
  source: z
    .string()
    .refine((text) => text.trim().length > 0, 'a source is required')
    .refine((text) => utf8Bytes(text) <= MAX_CODE_SOURCE_BYTES, `a source is at most ${MAX_CODE_SOURCE_BYTES} bytes`),
  timeoutMs: z.number().int().min(1).max(10_000).default(1_000),
  memoryMb: z.number().int().min(1).max(64).default(32),
});

// RFC 9110 token characters; CR/LF in a value would let a graph inject extra headers.
const headerName = z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/, 'not a valid header name');
const headerValue = z
  .string()
  .max(8192)
  .regex(/^[^\r\n\0]*$/, 'header values cannot contain CR, LF or NUL');

export const httpConfigSchema = z.strictObject({
  method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']),
  url: z.url({ protocol: /^https?$/, error: 'an absolute http(s) URL is required' }).max(2048),
  headers: z.record(headerName, headerValue).optional(),
  body: z.json().optional(),
  /** Upper bound of one request; the worker's egress guard may clamp it further. */
  timeoutMs: z.number().int().min(1).max(300_000).default(30_000),
});

export const approvalConfigSchema = z.strictObject({
  /** What is approved; its digest binds a decision to this exact action. */
  action: z.json().optional(),
  approvers: z.array(z.string().min(1).max(256)).max(100).optional(),
});

/** Task queue names: lowercase, so that `Billing` and `billing` are never two queues. */
export const TASK_QUEUE_PATTERN = /^[a-z0-9][a-z0-9._-]{0,63}$/;
export const taskQueueSchema = z
  .string()
  .regex(TASK_QUEUE_PATTERN, 'a queue name is 1-64 characters of a-z, 0-9, ".", "_" or "-", starting with a letter or digit');

/**
 * A step run by the user's own code, which polls its queue over HTTP (docs/api.md, "Task queues").
 * `input` is a JSONata expression over the node's input (default: the node's input itself);
 * `heartbeatTimeoutMs` is the lease a claim and each heartbeat grant; `timeoutMs` bounds one
 * task from its claim to its completion, whatever its heartbeats.
 */
export const taskConfigSchema = z.strictObject({
  queue: taskQueueSchema,
  input: transformConfigSchema.shape.expression.optional(),
  timeoutMs: z.number().int().min(1_000).max(ONE_DAY_MS).optional(),
  heartbeatTimeoutMs: z.number().int().min(1_000).max(3_600_000).default(30_000),
});

/**
 * `switch`: routes to some of its direct successors. The first case whose `when` (a JSONata
 * predicate over the node's input, cast with `$boolean`) holds is taken; with none, `default`.
 * Targets of cases not taken are skipped. Publish checks that every target is a direct successor.
 */
export const switchConfigSchema = z.strictObject({
  cases: z
    .array(
      z.strictObject({
        when: transformConfigSchema.shape.expression,
        to: z.array(nodeIdSchema).min(1).max(100),
      }),
    )
    .min(1)
    .max(50),
  default: z.array(nodeIdSchema).max(100).optional(),
});

/**
 * Runs another workflow of the workspace as a child execution and takes its output
 * (docs/api.md, "Sub-workflows"). `workflow` must be published in the workspace when this graph is;
 * `revision` pins one (default: the latest when the child starts); `input` is a JSONata expression
 * over the node's input giving the child's input (default: the node's input itself).
 */
export const subworkflowConfigSchema = z.strictObject({
  workflow: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'a workflow name must be 1-64 characters of A-Z, a-z, 0-9, "_" or "-"'),
  revision: z.number().int().min(1).optional(),
  input: transformConfigSchema.shape.expression.optional(),
});

/** Fails on purpose: lets tests and users exercise retry policies. */
export const failConfigSchema = z.strictObject({
  code: z.string().min(1).max(128).optional(),
  message: z.string().max(4096).optional(),
  retryable: z.boolean().default(false),
});

export type NoopConfig = z.output<typeof noopConfigSchema>;
export type DelayConfig = z.output<typeof delayConfigSchema>;
export type TransformConfig = z.output<typeof transformConfigSchema>;
export type CodeConfig = z.output<typeof codeConfigSchema>;
export type HttpConfig = z.output<typeof httpConfigSchema>;
export type ApprovalConfig = z.output<typeof approvalConfigSchema>;
export type FailConfig = z.output<typeof failConfigSchema>;
export type TaskConfig = z.output<typeof taskConfigSchema>;
export type SwitchConfig = z.output<typeof switchConfigSchema>;
export type SubworkflowConfig = z.output<typeof subworkflowConfigSchema>;
export type WaitSignalConfig = z.output<typeof waitSignalConfigSchema>;
