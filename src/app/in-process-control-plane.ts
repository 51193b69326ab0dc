import type { INestApplicationContext } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { UnauthenticatedError } from '../auth/auth.errors.js';
import type { Principal } from '../auth/principal.js';
import { TOKEN_REGISTRY, type TokenRegistry } from '../auth/token-registry.js';
import { type AppConfig, workerDispatchOf, workerResultsOf, workerTransportOf } from '../config/config.js';
import { BUS, type Bus } from '../core/bus.port.js';
import { DISPATCH_HAND_OVER, type DispatchHandOver } from '../dispatch/dispatch-hand-over.js';
import { LOGGER, type Logger } from '../core/logger.js';
import { claimCommandOf, completeCommandOf, heartbeatCommandOf } from '../executions/infrastructure/worker-protocol.requests.js';
import { toProblem } from '../http/problem.js';
import { inSpan, SpanKind } from '../observability/tracing.js';
import { resolveSecretsQueryOf } from '../secrets/infrastructure/secret-resolution.request.js';
import {
  CheckedGraphs,
  ClaimRefusedError,
  type ClaimReply,
  type ControlPlane,
  ControlPlaneUnavailableError,
  type HeartbeatReply,
} from '../worker/runtime/control-plane.port.js';
import type { ResultSink } from '../worker/runtime/result-sink.js';
import type { ControlPlaneRoute } from '../worker/runtime/worker.service.js';
import { InProcessResultSink } from './in-process-result-sink.js';

export interface InProcessControlPlaneDeps {
  commands: CommandBus;
  queries: QueryBus;
  registry: TokenRegistry;
  logger: Logger;
  /** The worker's bearer token: authenticated again on every call, as each HTTP request is. */
  token: string;
  /** A call not answered within it fails as unavailable, as the HTTP client's does; 10 s by default. */
  timeoutMs?: number;
}

/**
 * The ControlPlane of a worker that shares the api's process: its claims, heartbeats, secret
 * resolutions and fallback completions go to the api's command and query handlers directly,
 * without HTTP, Express or Nest's request pipeline.
 *
 * Nothing else is skipped. The worker's token is resolved through the process's TokenRegistry on
 * every call, so a token revoked by a reload of the tokens file stops this worker at its next
 * claim or heartbeat; the handlers check the global worker role as they do for HTTP. Requests
 * become the very commands the controllers build (worker-protocol.requests.ts), validated the
 * same way. Errors map through the problem table of the HTTP edge: a 4xx problem is a
 * ClaimRefusedError with that status and code, a 5xx or 429 a ControlPlaneUnavailableError.
 * Each call runs in a span of its own under the attempt's, so the commands' events carry the
 * attempt's trace as they do when the trace crosses HTTP in `traceparent`.
 *
 * Replies are trusted (they are the handlers' own typed results), but copied: a claim reply
 * holds parts of the execution state the handlers cache, which the worker must not share. Its
 * graph is read once per workflow digest into the worker's own form, as the HTTP client does.
 */
export class InProcessControlPlane implements ControlPlane {
  private readonly graphs = new CheckedGraphs();

  constructor(private readonly deps: InProcessControlPlaneDeps) {}

  /** The in-process control plane of the app `app` (which must run the api role), for the worker token `token`. */
  static of(app: INestApplicationContext, token: string): InProcessControlPlane {
    return new InProcessControlPlane({
      commands: app.get(CommandBus),
      queries: app.get(QueryBus),
      registry: app.get<TokenRegistry>(TOKEN_REGISTRY),
      logger: app.get<Logger>(LOGGER).child({ component: 'worker-protocol' }),
      token,
    });
  }

  claim(executionId: string, attemptId: string, workerId: string): Promise<ClaimReply> {
    return this.call('claim', executionId, attemptId, async (principal) => {
      const { workflow, ...rest } = await this.deps.commands.execute(claimCommandOf(principal, executionId, attemptId, { workerId }));
      const { graph, ...snapshot } = workflow;
      return { ...structuredClone(rest), workflow: { ...snapshot, graph: this.graphs.of(snapshot.digest, graph) } };
    });
  }

  heartbeat(executionId: string, attemptId: string, workerId: string, fencingToken: number): Promise<HeartbeatReply> {
    return this.call('heartbeat', executionId, attemptId, async (principal) => {
      const reply = await this.deps.commands.execute(heartbeatCommandOf(principal, executionId, attemptId, { workerId, fencingToken }));
      return { leaseExpiresAt: reply.leaseExpiresAt, cancelRequested: reply.cancelRequested };
    });
  }

  resolveSecrets(
    executionId: string,
    attemptId: string,
    body: { workerId: string; fencingToken: number; names: readonly string[] },
  ): Promise<ReadonlyMap<string, string>> {
    return this.call('secrets', executionId, attemptId, async (principal) => {
      const { values } = await this.deps.queries.execute(resolveSecretsQueryOf(principal, executionId, attemptId, body));
      return new Map(Object.entries(values));
    });
  }

  async complete(executionId: string, attemptId: string, body: Record<string, unknown>): Promise<void> {
    await this.call('complete', executionId, attemptId, (principal) =>
      this.deps.commands.execute(completeCommandOf(principal, executionId, attemptId, body)),
    );
  }

  /** Nothing is held: the handlers belong to the app, which its owner closes. */
  close(): void {}

  private call<T>(name: string, executionId: string, attemptId: string, work: (principal: Principal) => Promise<T>): Promise<T> {
    const attributes = { 'flostra.execution_id': executionId, 'flostra.attempt_id': attemptId };
    return inSpan(`worker-protocol ${name}`, { kind: SpanKind.INTERNAL, attributes }, async () => {
      try {
        const principal = this.deps.registry.authenticate(this.deps.token);
        if (principal === null) throw new UnauthenticatedError('unknown or revoked bearer token');
        return await this.answeredInTime(work(principal));
      } catch (error) {
        throw this.failure(name, error);
      }
    });
  }

  /** The call's answer, or ControlPlaneUnavailableError once the timeout passed without one (the handler goes on). */
  private answeredInTime<T>(answer: Promise<T>): Promise<T> {
    const timeoutMs = this.deps.timeoutMs ?? 10_000;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new ControlPlaneUnavailableError(`no answer within ${timeoutMs} ms`)), timeoutMs);
    });
    return Promise.race([answer, late]).finally(() => clearTimeout(timer));
  }

  /** What the HTTP client would have made of the problem the HTTP edge answers for `error`. */
  private failure(name: string, error: unknown): Error {
    if (error instanceof ControlPlaneUnavailableError) return error;
    const { problem, unexpected } = toProblem(error);
    if (unexpected) this.deps.logger.error('unhandled error', { call: name, err: error });
    if (problem.status >= 500 || problem.status === 429) {
      return new ControlPlaneUnavailableError(`control plane answered ${problem.status}: ${problem.detail}`);
    }
    return new ClaimRefusedError(problem.status, problem.code, problem.detail);
  }
}

/**
 * Where the worker role of a process that also runs `app` sends its calls (FLOSTRA_WORKER_TRANSPORT,
 * see `workerTransportOf`): to the app's handlers directly, or over HTTP to FLOSTRA_API_URL, else
 * to `ownUrl`, the app's own listener. Its results (FLOSTRA_WORKER_RESULTS, see
 * `workerResultsOf`): to the app's ingestor directly, or (no `results`) to the bus. And its
 * dispatches (FLOSTRA_WORKER_DISPATCH, see `workerDispatchOf`): handed over by the app's
 * dispatcher as well as taken from the bus, or (no `handOver`) from the bus only.
 */
export function workerControlPlaneRoute(app: INestApplicationContext, config: AppConfig, token: string, ownUrl: string): WorkerRoute {
  const route: ControlPlaneRoute =
    workerTransportOf(config) === 'in-process'
      ? { controlPlane: InProcessControlPlane.of(app, token) }
      : { apiUrl: config.apiUrl ?? ownUrl, token };
  return {
    ...route,
    ...(workerResultsOf(config) === 'in-process' ? { results: InProcessResultSink.of(app) } : {}),
    ...workerHandOver(app, workerDispatchOf(config)),
  };
}

/** What a worker of this process needs beside its settings: where it claims, reports, and takes dispatches from. */
export type WorkerRoute = ControlPlaneRoute & { results?: ResultSink } & Partial<WorkerHandOver>;

interface WorkerHandOver {
  handOver: DispatchHandOver;
  handOverBacklog?: number;
}

/**
 * The dispatcher's hand-over for a worker of this process (FLOSTRA_WORKER_DISPATCH, see
 * `workerDispatchOf`), or nothing when every dispatch goes on the bus. On a bus only this
 * process reads (the in-process bus) no other worker could take a dispatch the worker leaves:
 * it takes them all.
 */
export function workerHandOver(app: INestApplicationContext, dispatch: 'in-process' | 'bus'): Partial<WorkerHandOver> {
  if (dispatch !== 'in-process') return {};
  const handOver = app.get<DispatchHandOver>(DISPATCH_HAND_OVER, { strict: false });
  return app.get<Bus>(BUS, { strict: false }).durable ? { handOver } : { handOver, handOverBacklog: Number.POSITIVE_INFINITY };
}
