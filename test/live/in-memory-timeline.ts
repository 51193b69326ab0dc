import type { Position } from '../../src/core/event-store.port.js';
import type { TimelineEvent, TimelineReader } from '../../src/core/timeline.port.js';

/**
 * A TimelineReader over an array, for specifications of the live feed and connections: the
 * real one (the projector's) is exercised end to end in the other suites of this folder.
 * `beforeRead` lets a test append, or stall, in the middle of any read.
 */
export class InMemoryTimeline implements TimelineReader {
  readonly events: TimelineEvent[] = [];
  readonly reads = { all: 0, execution: 0, workspace: 0 };
  beforeRead: (kind: 'all' | 'execution' | 'workspace') => Promise<void> | void = () => undefined;
  private readonly listeners = new Set<() => void>();

  static position(n: number): Position {
    return String(n).padStart(12, '0');
  }

  append(executionId: string, workspaceId = 'ws-a', type = 'Something', data: unknown = {}): TimelineEvent {
    const revision = this.events.filter((e) => e.executionId === executionId).length;
    const event: TimelineEvent = {
      position: InMemoryTimeline.position(this.events.length + 1),
      eventId: `event-${this.events.length + 1}`,
      executionId,
      workspaceId,
      type,
      revision,
      recordedAt: new Date(0).toISOString(),
      data,
    };
    this.events.push(event);
    for (const listener of [...this.listeners]) listener();
    return event;
  }

  async readExecution(executionId: string, after: Position | null, limit: number): Promise<TimelineEvent[]> {
    this.reads.execution++;
    await this.beforeRead('execution');
    return this.page((e) => e.executionId === executionId, after, limit);
  }

  async readWorkspace(workspaceId: string, after: Position | null, limit: number): Promise<TimelineEvent[]> {
    this.reads.workspace++;
    await this.beforeRead('workspace');
    return this.page((e) => e.workspaceId === workspaceId, after, limit);
  }

  async readAll(after: Position | null, limit: number): Promise<TimelineEvent[]> {
    this.reads.all++;
    await this.beforeRead('all');
    return this.page(() => true, after, limit);
  }

  async workspaceOf(executionId: string): Promise<string | null> {
    return this.events.find((e) => e.executionId === executionId)?.workspaceId ?? null;
  }

  async checkpoint(): Promise<Position | null> {
    return this.events.at(-1)?.position ?? null;
  }

  onAdvance(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /** How many live feeds follow it now. */
  followers = 0;

  follow(): () => void {
    this.followers++;
    let released = false;
    return () => {
      if (!released) this.followers--;
      released = true;
    };
  }

  private page(match: (e: TimelineEvent) => boolean, after: Position | null, limit: number): TimelineEvent[] {
    // Copied at call time, as a database read would be: later appends do not show up in it.
    return this.events.filter((e) => match(e) && (after === null || e.position > after)).slice(0, limit);
  }
}

/** An SSE output that records what was written and drains only when told. */
export class RecordingOutput {
  readonly chunks: string[] = [];
  full = false;
  ended = false;
  destroyed = false;
  private drainListeners: (() => void)[] = [];

  write(chunk: string | Buffer): boolean {
    if (this.ended || this.destroyed) throw new Error('write after end');
    this.chunks.push(chunk.toString());
    return !this.full;
  }

  end(chunk?: string): void {
    if (chunk !== undefined) this.chunks.push(chunk);
    this.ended = true;
  }

  destroy(): void {
    this.destroyed = true;
  }

  once(_event: 'drain', listener: () => void): void {
    this.drainListeners.push(listener);
  }

  drain(): void {
    this.full = false;
    const listeners = this.drainListeners;
    this.drainListeners = [];
    for (const listener of listeners) listener();
  }

  /** Positions of the events written, in order. */
  get ids(): string[] {
    return this.chunks.flatMap((chunk) => [...chunk.matchAll(/^id: (.*)$/gm)].map((m) => m[1]));
  }
}
