import { Inject, Injectable, type BeforeApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import { hasWorkspaceRole, requireWorkspaceRole, type Principal } from '../auth/authorization.js';
import { TOKEN_REGISTRY, type TokenRegistry } from '../auth/token-registry.js';
import { EVENT_STORE, type EventStore, type Position } from '../core/event-store.port.js';
import { LOGGER, type Logger } from '../core/logger.js';
import { METRICS, type Metrics } from '../core/metrics.port.js';
import { TIMELINE_READER, type TimelineReader } from '../core/timeline.port.js';
import { NotFoundError, ValidationFailedError } from '../core/errors.js';
import { ExecutionStreams } from '../executions/application/execution-streams.js';
import { RetentionHorizon } from '../retention/application/retention-horizon.js';
import { isBeyondHorizon } from '../retention/domain/retention-policy.js';
import { CatchUpSlots } from './catch-up-slots.js';
import { LiveFeed, type LiveTopic } from './live-feed.js';
import { PositionAheadError, ResumeExpiredError, TooManyStreamsError } from './live.errors.js';
import { LiveSettings } from './live.settings.js';
import { SseConnection, type CatchUpRead, type CloseReason } from './sse-connection.js';
import { preambleFrame } from './sse-frame.js';

/** Where a client asked to resume: the position, and which of the request's parts named it. */
export interface ResumeFrom {
  position: Position;
  /** As issue paths name them: `Last-Event-ID` (the header) or `query.lastEventId`. */
  source: 'Last-Event-ID' | 'query.lastEventId';
}

/** A place among the open streams, taken before a stream opens and given back once, when it ends. */
interface StreamSlot {
  release(): void;
}

/** What one process's streams have done so far (for tests, benchmarks and metrics). */
export interface LiveStats {
  open: number;
  opened: number;
  closed: Record<CloseReason, number>;
}

/**
 * Opens SSE streams and looks after the open ones: authorization at connect and while open
 * (a revoked grant ends the stream: on every TokenRegistry change and on every tick), one
 * shared tick for heartbeats and stalled sockets, and an orderly end at shutdown.
 */
@Injectable()
export class LiveStreams implements OnModuleInit, BeforeApplicationShutdown {
  private readonly connections = new Set<SseConnection>();
  /** How to leave the live feed, per connection that joined it. */
  private readonly subscriptions = new Map<SseConnection, () => void>();
  private readonly closedBy: Record<CloseReason, number> = {
    client_gone: 0,
    slow_client: 0,
    stalled: 0,
    revoked: 0,
    shutdown: 0,
    failed: 0,
  };
  private opened = 0;
  private tickTimer: NodeJS.Timeout | null = null;
  private stopListening: (() => void)[] = [];
  private readonly log: Logger;
  private readonly slots = new CatchUpSlots(() => this.settings.current.maxConcurrentCatchUps);
  /** Streams open or opening, per token (by tokenId) and in all: what the stream limits count. */
  private readonly streamsByToken = new Map<string, number>();
  private streamCount = 0;

  constructor(
    @Inject(LiveFeed) private readonly feed: LiveFeed,
    @Inject(TIMELINE_READER) private readonly timeline: TimelineReader,
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(TOKEN_REGISTRY) private readonly registry: TokenRegistry,
    @Inject(LiveSettings) private readonly settings: LiveSettings,
    @Inject(ExecutionStreams) private readonly executions: ExecutionStreams,
    @Inject(RetentionHorizon) private readonly retention: RetentionHorizon,
    @Inject(LOGGER) logger: Logger,
    @Inject(METRICS) private readonly metrics: Metrics,
  ) {
    this.log = logger.child({ component: 'live' });
  }

  onModuleInit(): void {
    this.stopListening = [
      this.registry.onChange(() => this.reauthorizeAll()),
      this.settings.onTune(() => this.scheduleTick()),
      this.metrics.sseConnections(() => this.connections.size),
    ];
    this.scheduleTick();
  }

  beforeApplicationShutdown(): void {
    for (const stop of this.stopListening) stop();
    if (this.tickTimer !== null) clearTimeout(this.tickTimer);
    this.tickTimer = null;
    // Open streams would keep the HTTP server from closing.
    for (const connection of [...this.connections]) connection.close('shutdown', 'server shutting down');
  }

  stats(): LiveStats {
    return { open: this.connections.size, opened: this.opened, closed: { ...this.closedBy } };
  }

  /** One execution's events; the execution's own workspace decides (promise 10, docs/architecture.md), else 404. */
  async openExecutionStream(principal: Principal, executionId: string, resume: ResumeFrom | undefined, res: ServerResponse): Promise<void> {
    this.requireStorePosition(resume);
    const slot = this.takeSlot(principal);
    try {
      // The timeline may not know a just-started execution yet; the store always does.
      const workspaceId = (await this.timeline.workspaceOf(executionId)) ?? (await this.workspaceInStore(executionId, resume));
      requireWorkspaceRole(principal, workspaceId, 'viewer', 'execution not found');
      await this.requireReached(resume);
      const read: CatchUpRead = (cursor, limit) => this.slots.run(() => this.timeline.readExecution(executionId, cursor, limit));
      await this.open(principal, workspaceId, { kind: 'execution', executionId }, resume?.position ?? null, read, res, slot);
    } catch (error) {
      slot.release();
      throw error;
    }
  }

  /** A workspace's events; without a cursor it starts with the next event appended to the log. */
  async openWorkspaceStream(principal: Principal, workspaceId: string, resume: ResumeFrom | undefined, res: ServerResponse): Promise<void> {
    this.requireStorePosition(resume);
    const slot = this.takeSlot(principal);
    try {
      requireWorkspaceRole(principal, workspaceId, 'viewer');
      await this.requireReached(resume);
      await this.requireRetained(resume);
      // "Now" is the log's head, not the timeline's checkpoint: an event appended before the client
      // connected but projected after is not news, and the log's positions are the timeline's.
      const cursor = resume?.position ?? (await this.store.headPosition());
      const read: CatchUpRead = (position, limit) => this.slots.run(() => this.timeline.readWorkspace(workspaceId, position, limit));
      await this.open(principal, workspaceId, { kind: 'workspace', workspaceId }, cursor, read, res, slot);
    } catch (error) {
      slot.release();
      throw error;
    }
  }

  /**
   * A resume position must be one of this store's: anything else (`garbage`, another store's
   * format) would compare with the timeline's positions as text and silently deliver nothing.
   */
  private requireStorePosition(resume: ResumeFrom | undefined): void {
    if (resume === undefined || this.store.isPosition(resume.position)) return;
    throw new ValidationFailedError(`invalid ${resume.source}: not a position of this event store`, [
      { path: resume.source, message: 'not a position of this event store (send back an event id exactly as received)' },
    ]);
  }

  /** A position of this store's form beyond its log was never handed out: refused, never a silent gap. */
  private async requireReached(resume: ResumeFrom | undefined): Promise<void> {
    if (resume !== undefined && (await this.store.isAheadOfLog(resume.position))) {
      throw new PositionAheadError(resume.source === 'Last-Event-ID' ? 'Last-Event-ID' : 'lastEventId', resume.position);
    }
  }

  /**
   * An execution's workspace from its stream. Gone from the store with a resume position older
   * than the retention horizon, it may have been deleted: 410, whatever the execution (a made-up
   * id answers alike, so nothing is revealed); else 404.
   */
  private async workspaceInStore(executionId: string, resume: ResumeFrom | undefined): Promise<string> {
    try {
      return (await this.executions.load(executionId)).state.workspaceId;
    } catch (error) {
      if (error instanceof NotFoundError) await this.requireRetained(resume);
      throw error;
    }
  }

  /** A workspace's events after a position older than the retention horizon may be gone: refused, never a silent gap. */
  private async requireRetained(resume: ResumeFrom | undefined): Promise<void> {
    if (resume === undefined) return;
    const horizon = await this.retention.current();
    if (horizon !== null && isBeyondHorizon(resume.position, horizon)) {
      throw new ResumeExpiredError(resume.source === 'Last-Event-ID' ? 'Last-Event-ID' : 'lastEventId', resume.position, horizon);
    }
  }

  /** Counts a stream against its token's and the process's limits, or refuses it (429) before anything is read. */
  private takeSlot(principal: Principal): StreamSlot {
    const { maxStreamsPerToken, maxStreams } = this.settings.current;
    const key = principal.tokenId;
    const ofToken = this.streamsByToken.get(key) ?? 0;
    if (ofToken >= maxStreamsPerToken) throw new TooManyStreamsError('token', maxStreamsPerToken);
    if (this.streamCount >= maxStreams) throw new TooManyStreamsError('process', maxStreams);
    this.streamsByToken.set(key, ofToken + 1);
    this.streamCount++;
    let held = true;
    return {
      release: () => {
        if (!held) return;
        held = false;
        this.streamCount--;
        const left = (this.streamsByToken.get(key) ?? 1) - 1;
        if (left > 0) this.streamsByToken.set(key, left);
        else this.streamsByToken.delete(key);
      },
    };
  }

  private async open(
    principal: Principal,
    workspaceId: string,
    topic: LiveTopic,
    cursor: Position | null,
    read: CatchUpRead,
    res: ServerResponse,
    slot: StreamSlot,
  ): Promise<void> {
    // The client left while its stream was being authorized: its 'close' is gone, and so is it.
    if (res.destroyed) return slot.release();
    const options = this.settings.current;
    res.statusCode = 200;
    res.setHeader('Content-Type', 'text/event-stream');
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Accel-Buffering', 'no');
    const preamble = preambleFrame(options.retryMs);
    res.write(preamble);
    this.metrics.sseBytesSent(Buffer.byteLength(preamble));
    const connection = new SseConnection({
      output: res,
      principal,
      workspaceId,
      topic,
      cursor,
      options: () => this.settings.current,
      onSent: (bytes) => this.metrics.sseBytesSent(bytes),
      onClosed: (closed, reason) => {
        slot.release();
        this.forget(closed, reason);
      },
    });
    this.connections.add(connection);
    this.opened++;
    res.once('close', () => connection.close('client_gone'));
    // A change notice that came while this request awaited the database found no connection.
    this.reauthorize(connection);
    if (connection.closed) return;
    try {
      const unsubscribe = await this.feed.subscribe(topic, connection);
      if (connection.closed) return unsubscribe();
      this.subscriptions.set(connection, unsubscribe);
      await connection.catchUp(read);
    } catch (error) {
      // Headers are gone: the only answer left is to end, and the client resumes.
      this.log.warn('live stream failed', { topic, error: String(error) });
      connection.close('failed', 'temporarily unavailable');
    }
  }

  private forget(connection: SseConnection, reason: CloseReason): void {
    this.connections.delete(connection);
    this.subscriptions.get(connection)?.();
    this.subscriptions.delete(connection);
    this.closedBy[reason]++;
    if (reason === 'slow_client' || reason === 'stalled') {
      this.log.info('disconnected a live client that could not keep up; it resumes with Last-Event-ID', {
        reason,
        subject: connection.principal.subject,
      });
    }
  }

  private reauthorizeAll(): void {
    for (const connection of [...this.connections]) this.reauthorize(connection);
  }

  private reauthorize(connection: SseConnection): void {
    const current = this.registry.current(connection.principal);
    if (current === null || !hasWorkspaceRole(current, connection.workspaceId, 'viewer')) connection.close('revoked', 'grant revoked');
  }

  private scheduleTick(): void {
    if (this.tickTimer !== null) clearTimeout(this.tickTimer);
    this.tickTimer = setTimeout(() => {
      const now = Date.now();
      for (const connection of [...this.connections]) {
        // Re-checked on every tick too: a grant can also vanish without a change notice.
        this.reauthorize(connection);
        connection.tick(now);
      }
      this.scheduleTick();
    }, this.settings.current.heartbeatMs);
    this.tickTimer.unref();
  }
}
