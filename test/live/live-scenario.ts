import { expect } from '@jest/globals';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { TokenRegistry } from '../../src/auth/token-registry.js';
import { TOKEN_REGISTRY } from '../../src/auth/token-registry.js';
import { LiveSettings, type LiveOptions } from '../../src/live/live.settings.js';
import { LiveStreams } from '../../src/live/live-streams.service.js';
import type { ApiClient } from '../support/http-client.js';
import { claim, start } from '../support/scenario.js';
import { TOKENS } from '../support/test-app.js';

const attemptPath = (executionId: string, attemptId: string, verb: string) => `/v1/executions/${executionId}/attempts/${attemptId}/${verb}`;

/** One event as /history shows it. */
export interface HistoryEvent {
  eventId: string;
  type: string;
  position: string;
  revision: number;
  recordedAt: string;
  data: unknown;
}

/** Every event of an execution, through /history pages. */
export async function historyOf(api: ApiClient, executionId: string): Promise<HistoryEvent[]> {
  const events: HistoryEvent[] = [];
  let after: string | null = null;
  for (;;) {
    const res = await api.get(
      `/v1/executions/${executionId}/history?limit=1000${after === null ? '' : `&after=${encodeURIComponent(after)}`}`,
      { token: TOKENS.viewerA },
    );
    expect(res.status).toBe(200);
    events.push(...(res.body.events as HistoryEvent[]));
    if (res.body.nextCursor === null) return events;
    after = res.body.nextCursor as string;
  }
}

/** A running attempt, driven over the worker protocol: each step appends events. */
export async function startAndClaim(api: ApiClient, workflow: string, input: object = {}) {
  const { executionId, attemptId } = await start(api, workflow, { input });
  const claimed = await claim(api, executionId, attemptId);
  expect(claimed.status).toBe(200);
  const fence = { workerId: 'worker-1', fencingToken: claimed.body.fencingToken as number };
  return {
    executionId,
    /** Appends a LeaseExtended; resolves when the command was answered (appended). */
    async heartbeat() {
      const res = await api.post(attemptPath(executionId, attemptId, 'heartbeat'), { token: TOKENS.worker, body: fence });
      expect(res.status).toBe(200);
    },
    async complete() {
      const res = await api.post(attemptPath(executionId, attemptId, 'complete'), {
        token: TOKENS.worker,
        body: { ...fence, outcome: 'succeeded', output: { ok: true } },
      });
      expect(res.status).toBe(200);
    },
  };
}

/** Starts, claims, heartbeats `beats` times and completes one execution. */
export async function runExecution(api: ApiClient, workflow: string, beats: number, pause: () => Promise<void> = async () => undefined) {
  const run = await startAndClaim(api, workflow);
  for (let i = 0; i < beats; i++) {
    await pause();
    await run.heartbeat();
  }
  await run.complete();
  return run.executionId;
}

export function liveOf(app: NestExpressApplication): {
  streams: LiveStreams;
  tune(options: Partial<LiveOptions>): void;
  registry: TokenRegistry;
} {
  return {
    streams: app.get(LiveStreams),
    tune: (options) => app.get(LiveSettings).tune(options),
    registry: app.get<TokenRegistry>(TOKEN_REGISTRY),
  };
}

/** A small seeded PRNG (mulberry32): a failing run can be replayed with its seed. */
export function seededRandom(seed: number): () => number {
  let a = seed + 0x6d2b79f5;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let r = Math.imul(a ^ (a >>> 15), 1 | a);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Returns a function that cuts the TCP connection of every SSE stream opened on `server` so
 * far, from the server's side, as a crash or a network cut would; other requests are untouched.
 */
export function dropperOfStreams(server: Server): () => void {
  const sockets = new Set<Socket>();
  server.on('request', (req) => {
    if (/\/events(\?|$)/.test(req.url ?? '')) sockets.add(req.socket);
  });
  return () => {
    for (const socket of sockets) socket.destroy();
    sockets.clear();
  };
}
