import { describe, expect, it } from '@jest/globals';
import type { Principal } from '../../src/auth/authorization.js';
import { createLogger } from '../../src/core/logger.js';
import { LiveFeed, type LiveTopic } from '../../src/live/live-feed.js';
import { LiveSettings, type LiveOptions } from '../../src/live/live.settings.js';
import { SseConnection, type CloseReason } from '../../src/live/sse-connection.js';
import { InMemoryTimeline, RecordingOutput } from './in-memory-timeline.js';
import { seededRandom } from './live-scenario.js';

const principal: Principal = { subject: 'victor', workspaces: new Map([['ws-a', 'viewer']]), global: new Set(), tokenId: 'x' };
const settle = async (rounds = 5) => {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setImmediate(resolve));
};

function setup(options: Partial<LiveOptions> = {}) {
  const timeline = new InMemoryTimeline();
  const settings = new LiveSettings();
  settings.tune({ feedPollMs: 60_000, catchUpPageSize: 3, feedPageSize: 4, ...options });
  const feed = new LiveFeed(timeline, settings, createLogger({ level: 'silent' }));
  const closed: CloseReason[] = [];
  async function connect(topic: LiveTopic, cursor: string | null = null) {
    const output = new RecordingOutput();
    const connection = new SseConnection({
      output,
      principal,
      workspaceId: 'ws-a',
      topic,
      cursor,
      options: () => settings.current,
      onClosed: (_c, reason) => closed.push(reason),
    });
    await feed.subscribe(topic, connection);
    const read =
      topic.kind === 'execution'
        ? (after: string | null, limit: number) => timeline.readExecution(topic.executionId, after, limit)
        : (after: string | null, limit: number) => timeline.readWorkspace(topic.workspaceId, after, limit);
    const caughtUp = connection.catchUp(read);
    return { output, connection, caughtUp };
  }
  const positionsOf = (match: (e: { executionId: string; workspaceId: string }) => boolean) =>
    timeline.events.filter(match).map((e) => e.position);
  return { timeline, settings, feed, closed, connect, positionsOf, stop: () => feed.onApplicationShutdown() };
}

describe('the live feed', () => {
  it('reads the timeline once per advance, however many connections listen', async () => {
    const t = setup();
    const outputs = await Promise.all(Array.from({ length: 50 }, () => t.connect({ kind: 'workspace', workspaceId: 'ws-a' })));
    await settle();
    const readsBefore = t.timeline.reads.all;
    for (let i = 0; i < 3; i++) t.timeline.append('e1');
    await settle();
    expect(t.timeline.reads.all - readsBefore).toBeLessThanOrEqual(3);
    for (const { output } of outputs) expect(output.ids).toEqual(t.positionsOf(() => true));
    t.stop();
  });

  it('delivers an event to the streams of its execution and of its workspace only', async () => {
    const t = setup();
    const e1 = await t.connect({ kind: 'execution', executionId: 'e1' });
    const wsB = await t.connect({ kind: 'workspace', workspaceId: 'ws-b' });
    t.timeline.append('e1', 'ws-a');
    t.timeline.append('e2', 'ws-a');
    t.timeline.append('e3', 'ws-b');
    await settle();
    expect(e1.output.ids).toEqual(t.positionsOf((e) => e.executionId === 'e1'));
    expect(wsB.output.ids).toEqual(t.positionsOf((e) => e.workspaceId === 'ws-b'));
    t.stop();
  });
});

describe('the live feed and the timeline it follows', () => {
  it('asks the projector to keep the timeline fresh while any stream listens, and lets go when the last leaves', async () => {
    const t = setup();
    const sink = { deliver: () => undefined };
    expect(t.timeline.followers).toBe(0);
    const first = await t.feed.subscribe({ kind: 'execution', executionId: 'e1' }, sink);
    const second = await t.feed.subscribe({ kind: 'workspace', workspaceId: 'ws-a' }, sink);
    expect(t.timeline.followers).toBe(1);
    first();
    first();
    expect(t.timeline.followers).toBe(1);
    second();
    expect(t.timeline.followers).toBe(0);
    const again = await t.feed.subscribe({ kind: 'execution', executionId: 'e2' }, sink);
    expect(t.timeline.followers).toBe(1);
    t.stop();
    expect(t.timeline.followers).toBe(0);
    again();
    expect(t.timeline.followers).toBe(0);
  });
});

describe('the seam between catch-up and live', () => {
  it('sends an execution from its first event, then live, each event once', async () => {
    const t = setup();
    for (let i = 0; i < 10; i++) t.timeline.append(i % 2 === 0 ? 'e1' : 'e2');
    let appendsDuringReads = 3;
    t.timeline.beforeRead = (kind) => {
      if (kind === 'execution' && appendsDuringReads-- > 0) t.timeline.append('e1');
    };
    const { output, caughtUp } = await t.connect({ kind: 'execution', executionId: 'e1' });
    await caughtUp;
    t.timeline.append('e1');
    await settle();
    expect(output.ids).toEqual(t.positionsOf((e) => e.executionId === 'e1'));
    t.stop();
  });

  it('resumes strictly after the cursor', async () => {
    const t = setup();
    for (let i = 0; i < 8; i++) t.timeline.append('e1');
    const cursor = t.timeline.events[4].position;
    const { output, caughtUp } = await t.connect({ kind: 'execution', executionId: 'e1' }, cursor);
    await caughtUp;
    expect(output.ids).toEqual(t.positionsOf(() => true).slice(5));
    t.stop();
  });

  it('loses and repeats nothing whatever the interleaving of appends, reads and wake-ups', async () => {
    for (let round = 0; round < 150; round++) {
      const t = setup({ catchUpPageSize: 1 + (round % 4), feedPageSize: 1 + (round % 3), maxBufferedEvents: 2 + (round % 5) });
      const random = seededRandom(round);
      for (let i = 0; i < random() * 12; i++) t.timeline.append(random() < 0.5 ? 'e1' : 'e2');
      t.timeline.beforeRead = async () => {
        while (random() < 0.4) t.timeline.append(random() < 0.6 ? 'e1' : 'e2');
        if (random() < 0.3) await settle(1);
      };
      const cursor = random() < 0.3 ? (t.timeline.events[0]?.position ?? null) : null;
      const { output, caughtUp } = await t.connect({ kind: 'execution', executionId: 'e1' }, cursor);
      await caughtUp;
      for (let i = 0; i < 5; i++) t.timeline.append('e1');
      await settle(200);
      const expected = t.positionsOf((e) => e.executionId === 'e1').filter((p) => cursor === null || p > cursor);
      expect({ round, closed: t.closed, ids: output.ids }).toEqual({ round, closed: [], ids: expected });
      t.stop();
    }
  });
});

describe('a client that cannot keep up', () => {
  it('is disconnected once its buffer is full, after a gapless prefix, never skipped', async () => {
    const t = setup({ maxBufferedEvents: 5 });
    const { output, connection, caughtUp } = await t.connect({ kind: 'execution', executionId: 'e1' });
    await caughtUp;
    output.full = true;
    for (let i = 0; i < 20; i++) {
      t.timeline.append('e1');
      await settle();
    }
    expect(connection.closed).toBe(true);
    expect(t.closed).toEqual(['slow_client']);
    expect(output.destroyed).toBe(true);
    const all = t.positionsOf(() => true);
    expect(output.ids).toEqual(all.slice(0, output.ids.length));
    expect(output.ids.length).toBeLessThan(all.length);
    t.stop();
  });

  it('keeps a client that drains before its buffer fills', async () => {
    const t = setup({ maxBufferedEvents: 5 });
    const { output, connection, caughtUp } = await t.connect({ kind: 'execution', executionId: 'e1' });
    await caughtUp;
    for (let i = 0; i < 20; i++) {
      output.full = i % 4 === 0;
      t.timeline.append('e1');
      await settle();
      if (i % 4 === 3) output.drain();
    }
    output.drain();
    expect(connection.closed).toBe(false);
    expect(output.ids).toEqual(t.positionsOf(() => true));
    t.stop();
  });

  it('is disconnected when its socket stays full past the stall timeout', async () => {
    const t = setup({ stallTimeoutMs: 1_000 });
    const { output, connection, caughtUp } = await t.connect({ kind: 'execution', executionId: 'e1' });
    await caughtUp;
    output.full = true;
    t.timeline.append('e1');
    await settle();
    connection.tick(Date.now());
    expect(connection.closed).toBe(false);
    connection.tick(Date.now() + 1_000);
    expect(t.closed).toEqual(['stalled']);
    expect(output.destroyed).toBe(true);
    t.stop();
  });
});
