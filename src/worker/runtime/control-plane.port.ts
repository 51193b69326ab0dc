import { z } from 'zod';
import { executionErrorSchema } from '../../executions/domain/execution.events.js';
import { workflowGraphSchema, type WorkflowGraph } from '../../workflows/domain/workflow-graph.schema.js';

/** What a won claim hands the worker (docs/api.md, "Worker protocol"). */
export const claimReplySchema = z.object({
  executionId: z.string(),
  workspaceId: z.string(),
  attemptId: z.string(),
  attemptNumber: z.number().int(),
  fencingToken: z.number().int(),
  leaseExpiresAt: z.string(),
  heartbeatIntervalMs: z.number().int().min(1),
  workflow: z.object({
    workflowId: z.string(),
    name: z.string(),
    revision: z.number().int(),
    digest: z.string(),
    graph: workflowGraphSchema,
  }),
  input: z.record(z.string(), z.unknown()),
  completedNodes: z.record(z.string(), z.unknown()),
  /** Absent from control planes older than task nodes. */
  failedNodes: z.record(z.string(), executionErrorSchema).optional(),
  /** Outputs of map items finished earlier, by map node id, then item index; absent from control planes older than maps. */
  completedItems: z.record(z.string(), z.record(z.string(), z.unknown())).optional(),
});
export type ClaimReply = z.infer<typeof claimReplySchema>;

export const heartbeatReplySchema = z.object({ leaseExpiresAt: z.string(), cancelRequested: z.boolean() });
export type HeartbeatReply = z.infer<typeof heartbeatReplySchema>;

/** Graphs already checked, by workflow digest: the workflows a worker runs again and again. */
const CHECKED_GRAPHS = 256;

/**
 * A claim reply's graph, the largest part, checked only the first time its workflow digest
 * comes: the digest names the published revision's exact content, so later claims of that
 * revision run the graph checked then.
 */
export class CheckedGraphs {
  private readonly graphs = new Map<string, WorkflowGraph>();

  of(digest: string, graph: unknown): WorkflowGraph {
    let checked = this.graphs.get(digest);
    if (checked === undefined) {
      checked = workflowGraphSchema.parse(graph);
      this.graphs.set(digest, checked);
      if (this.graphs.size > CHECKED_GRAPHS) this.graphs.delete(this.graphs.keys().next().value!);
    }
    return checked;
  }
}

/** The control plane said no (409/404, or 400/401/403): the worker must not run or must stop. */
export class ClaimRefusedError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    detail: string,
  ) {
    super(`${code}: ${detail}`);
  }
}

/** The control plane could not be reached or failed (network, 5xx, 429): worth trying again. */
export class ControlPlaneUnavailableError extends Error {}

/**
 * The worker's only way to the control plane's state: answered calls, never fire-and-forget
 * messages, since only the claim winner runs (promise 3, docs/architecture.md). Two adapters:
 * `ControlPlaneClient` over HTTP (a worker process of its own, or FLOSTRA_WORKER_TRANSPORT=http),
 * and the in-process one of src/app, which calls the api's handlers directly when the worker
 * shares the api's process. Both authenticate the worker's token on every call and fail the
 * same way: a refusal is a ClaimRefusedError with the problem's status and code, anything worth
 * trying again a ControlPlaneUnavailableError.
 */
export interface ControlPlane {
  claim(executionId: string, attemptId: string, workerId: string): Promise<ClaimReply>;
  heartbeat(executionId: string, attemptId: string, workerId: string, fencingToken: number): Promise<HeartbeatReply>;
  /** The values of the secrets the claimed graph references: answered only to the live claim. */
  resolveSecrets(
    executionId: string,
    attemptId: string,
    body: { workerId: string; fencingToken: number; names: readonly string[] },
  ): Promise<ReadonlyMap<string, string>>;
  /** The fallback path when results cannot be published: report the end synchronously. */
  complete(executionId: string, attemptId: string, body: Record<string, unknown>): Promise<void>;
  /** Releases what the adapter holds (kept-alive connections). */
  close(): void;
}
