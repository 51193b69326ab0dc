import { z } from 'zod';
import { workflowGraphSchema } from '../../workflows/domain/workflow-graph.schema.js';

/** What a won claim hands the worker (API.md "Worker protocol"), checked at the edge. */
export const claimReplySchema = z.object({
  executionId: z.string(),
  workspaceId: z.string(),
  attemptId: z.string(),
  attemptNumber: z.number().int(),
  fencingToken: z.number().int(),
  leaseExpiresAt: z.string(),
  heartbeatIntervalMs: z.number().int().min(1),
  workflow: z.object({ workflowId: z.string(), name: z.string(), revision: z.number().int(), digest: z.string(), graph: workflowGraphSchema }),
  input: z.record(z.string(), z.unknown()),
  completedNodes: z.record(z.string(), z.unknown()),
});
export type ClaimReply = z.infer<typeof claimReplySchema>;

const heartbeatReplySchema = z.object({ leaseExpiresAt: z.string(), cancelRequested: z.boolean() });
export type HeartbeatReply = z.infer<typeof heartbeatReplySchema>;

/** The control plane said no (409/404): the worker must not run or must stop. */
export class ClaimRefusedError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    detail: string,
  ) {
    super(`${code}: ${detail}`);
  }
}

/** The control plane could not be reached or failed (network, 5xx): worth trying again. */
export class ControlPlaneUnavailableError extends Error {}

/**
 * The worker's only way to the control plane's state: synchronous HTTP. Only the claim winner
 * runs (promise 3), so the claim must be an answered request, never a fire-and-forget message.
 */
export class ControlPlaneClient {
  constructor(
    private readonly baseUrl: string,
    private readonly token: string,
    private readonly timeoutMs = 10_000,
  ) {}

  async claim(executionId: string, attemptId: string, workerId: string): Promise<ClaimReply> {
    return claimReplySchema.parse(await this.post(`/v1/executions/${executionId}/attempts/${attemptId}/claim`, { workerId }));
  }

  async heartbeat(executionId: string, attemptId: string, workerId: string, fencingToken: number): Promise<HeartbeatReply> {
    return heartbeatReplySchema.parse(await this.post(`/v1/executions/${executionId}/attempts/${attemptId}/heartbeat`, { workerId, fencingToken }));
  }

  /** The fallback path when results cannot be published: report the failure synchronously. */
  async complete(executionId: string, attemptId: string, body: Record<string, unknown>): Promise<void> {
    await this.post(`/v1/executions/${executionId}/attempts/${attemptId}/complete`, body);
  }

  private async post(path: string, body: unknown): Promise<unknown> {
    let response: Response;
    try {
      response = await fetch(this.baseUrl + path, {
        method: 'POST',
        headers: { authorization: `Bearer ${this.token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      throw new ControlPlaneUnavailableError(`control plane unreachable: ${String(error)}`);
    }
    const text = await response.text();
    const parsed = text === '' ? null : (JSON.parse(text) as Record<string, unknown>);
    if (response.ok) return parsed;
    if (response.status >= 500 || response.status === 429) {
      throw new ControlPlaneUnavailableError(`control plane answered ${response.status}: ${String(parsed?.['detail'] ?? text)}`);
    }
    throw new ClaimRefusedError(response.status, String(parsed?.['code'] ?? 'error'), String(parsed?.['detail'] ?? text));
  }
}
