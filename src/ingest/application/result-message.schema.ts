import { z } from 'zod';
import { MAX_RESULT_MESSAGE_BYTES } from '../../core/bus.port.js';
import { executionErrorSchema } from '../../executions/domain/execution.events.js';
import { MAX_MAP_ITEMS } from '../../workflows/domain/workflow-graph.schema.js';

/** Larger messages are dead-lettered unread (promise 11, docs/architecture.md: limits on message size). */
export { MAX_RESULT_MESSAGE_BYTES };

const id = z.string().min(1).max(200);
const itemIndex = z
  .number()
  .int()
  .min(0)
  .max(MAX_MAP_ITEMS - 1);

export const RESULT_KINDS = [
  'node_started',
  'node_succeeded',
  'node_failed',
  'node_skipped',
  'node_waiting',
  'map_items',
  'attempt_succeeded',
  'attempt_failed',
  'attempt_cancelled',
  'attempt_suspended',
] as const;

/**
 * A worker result on `flostra.results.v1` (docs/api.md, "Worker protocol"). Extensions: `reason` (why a
 * node was skipped), `node_waiting` (a task node asks for its task: `wait: { kind: 'task', input }`; a
 * subworkflow node for its child: `wait: { kind: 'subworkflow', input }`; a `delay` node for its
 * timer, a `wait_signal` node for a signal: `wait: { kind: 'timer' | 'signal' }`), `attempt_suspended`
 * (the attempt stopped at the approval node `nodeId`, whose `output.action` is the exact action to
 * approve, at the task and subworkflow nodes `tasks`, the `delay` nodes `timers` and the
 * `wait_signal` nodes `signals`) and `map_items` (facts about the items of the map `nodeId`:
 * `items: { started, completed, failed }`). Node results name their node.
 */
export const resultMessageSchema = z
  .object({
    messageId: id,
    executionId: id,
    attemptId: id,
    workerId: id,
    fencingToken: z.number().int().min(1),
    sequence: z.number().int().min(0),
    kind: z.enum(RESULT_KINDS),
    nodeId: id.optional(),
    output: z.unknown().optional(),
    error: executionErrorSchema.optional(),
    reason: z.string().max(1024).optional(),
    wait: z
      .discriminatedUnion('kind', [
        z.object({ kind: z.enum(['task', 'subworkflow']), input: z.unknown() }),
        z.object({ kind: z.enum(['timer', 'signal']) }),
      ])
      .optional(),
    tasks: z.array(id).max(1000).optional(),
    /** For `attempt_suspended`: `delay` nodes waiting for their timers, `wait_signal` nodes for a signal. */
    timers: z.array(id).max(1000).optional(),
    signals: z.array(id).max(1000).optional(),
    items: z
      .object({
        started: z.array(itemIndex).max(MAX_MAP_ITEMS),
        completed: z.array(z.object({ index: itemIndex, output: z.unknown() })).max(MAX_MAP_ITEMS),
        failed: z.array(z.object({ index: itemIndex, error: executionErrorSchema })).max(MAX_MAP_ITEMS),
      })
      .optional(),
  })
  .refine((m) => !m.kind.startsWith('node_') || m.nodeId !== undefined, {
    message: 'nodeId is required for node results',
    path: ['nodeId'],
  })
  .refine(
    (m) =>
      m.kind !== 'attempt_suspended' ||
      m.nodeId !== undefined ||
      (m.tasks?.length ?? 0) + (m.timers?.length ?? 0) + (m.signals?.length ?? 0) > 0,
    {
      message: 'a suspended attempt names its approval node (nodeId) or its waiting nodes (tasks, timers, signals)',
      path: ['nodeId'],
    },
  )
  .refine((m) => m.kind !== 'node_waiting' || m.wait !== undefined, { message: 'wait is required for a waiting node', path: ['wait'] })
  .refine((m) => m.kind !== 'map_items' || (m.nodeId !== undefined && m.items !== undefined), {
    message: 'map_items names its map node (nodeId) and carries its item facts (items)',
    path: ['items'],
  });

export type ResultMessage = z.infer<typeof resultMessageSchema>;

export type ParsedResult =
  { ok: true; result: ResultMessage } | { ok: false; code: 'payload_too_large' | 'validation_failed'; message: string };

/** Size, JSON and schema checks at the edge; nothing downstream sees an unchecked message. */
export function parseResultMessage(text: string, maxBytes: number = MAX_RESULT_MESSAGE_BYTES): ParsedResult {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > maxBytes) return { ok: false, code: 'payload_too_large', message: `message is ${bytes} bytes; the limit is ${maxBytes}` };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return { ok: false, code: 'validation_failed', message: `not JSON: ${(error as Error).message}` };
  }
  const parsed = resultMessageSchema.safeParse(json);
  if (!parsed.success) return { ok: false, code: 'validation_failed', message: z.prettifyError(parsed.error) };
  return { ok: true, result: parsed.data };
}
