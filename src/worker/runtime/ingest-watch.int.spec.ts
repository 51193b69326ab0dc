import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, jest } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { eventually, sleep } from '../../../test/support/eventually.js';
import { InProcessBus } from '../../bus/in-process/in-process-bus.js';
import type { Bus, ConsumerHandle, OutgoingMessage } from '../../core/bus.port.js';
import { createLogger } from '../../core/logger.js';
import { ControlPlaneClient } from './control-plane.client.js';
import { IngestWatch } from './ingest-watch.js';
import { LeaseKeeper } from './lease-keeper.js';

const TOPIC = 'results';
const INGESTOR = 'ingestor';
const log = createLogger({ level: 'silent' });

function results(count: number, from = 0): OutgoingMessage[] {
  return Array.from({ length: count }, (_, n) => ({ key: `execution-${(from + n) % 5}`, value: `result-${from + n}` }));
}

/** The ingestor's side: a consumer of the group that handles results one by one, holding any the test names. */
async function ingestor(bus: Bus, hold: (value: string) => Promise<void> = async () => {}) {
  const handled: string[] = [];
  const handle: ConsumerHandle = await bus.consume({
    groupId: INGESTOR,
    topic: TOPIC,
    concurrency: 3,
    handle: async (message) => {
      await hold(message.value);
      handled.push(message.value);
    },
  });
  return { handled, stop: () => handle.stop() };
}

describe('IngestWatch', () => {
  let bus: InProcessBus;
  let watch: IngestWatch;

  beforeEach(async () => {
    bus = new InProcessBus();
    await bus.ensureTopics([{ topic: TOPIC, partitions: 3 }]);
    // A long period: these tests look by hand unless they say otherwise.
    watch = new IngestWatch({ bus, topic: TOPIC, groupId: INGESTOR, periodMs: 60_000, logger: log });
  });
  afterEach(async () => {
    watch.stop();
    await bus.close();
  });

  describe('given results published before an attempt starts waiting', () => {
    it('answers only once the ingestor group has handled every one of them', async () => {
      await bus.publish(TOPIC, results(10));
      let answered = 0;
      watch.whenHandled(() => answered++);

      await watch.look();
      expect(answered).toBe(0); // nobody consumed anything yet

      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      const consumer = await ingestor(bus, (value) => (value === 'result-7' ? released : Promise.resolve()));
      await eventually(() => consumer.handled.length === 9, 'all but the held result');
      await watch.look();
      expect(answered).toBe(0); // one result of the ten is still being handled

      release();
      await eventually(() => consumer.handled.length === 10, 'the held result');
      await watch.look();
      expect(answered).toBe(1);
      await watch.look();
      expect(answered).toBe(1); // once
      await consumer.stop();
    });
  });

  describe('given results published after the attempt started waiting', () => {
    it('does not make it wait for them', async () => {
      await bus.publish(TOPIC, results(4));
      let answered = 0;
      watch.whenHandled(() => answered++);
      await watch.look(); // its mark: the four results
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      const consumer = await ingestor(bus, (value) => (value === 'result-5' ? released : Promise.resolve()));
      await bus.publish(TOPIC, results(4, 4));
      await eventually(() => consumer.handled.length === 7, 'all but the later held result');

      await watch.look();
      expect(answered).toBe(1);
      release();
      await consumer.stop();
    });
  });

  describe('when an attempt stops waiting first', () => {
    it('is never answered, and is not counted as waiting', async () => {
      await bus.publish(TOPIC, results(3));
      let answered = 0;
      const cancel = watch.whenHandled(() => answered++);
      expect(watch.waiting).toBe(1);
      cancel();
      expect(watch.waiting).toBe(0);
      const consumer = await ingestor(bus);
      await eventually(() => consumer.handled.length === 3, 'the results');
      await watch.look();
      expect(answered).toBe(0);
      await consumer.stop();
    });
  });

  describe('when the bus cannot answer', () => {
    it('answers nothing, rejects nothing, and answers once the bus is back', async () => {
      let down = true;
      const flaky: Bus = {
        durable: bus.durable,
        publish: (topic, messages) => bus.publish(topic, messages),
        consume: (options) => bus.consume(options),
        endOffsets: (topic) => (down ? Promise.reject(new Error('broker down (injected)')) : bus.endOffsets(topic)),
        committedOffsets: (groupId, topic) =>
          down ? Promise.reject(new Error('broker down (injected)')) : bus.committedOffsets(groupId, topic),
        ensureTopics: (topics) => bus.ensureTopics(topics),
        close: () => bus.close(),
      };
      const watching = new IngestWatch({ bus: flaky, topic: TOPIC, groupId: INGESTOR, periodMs: 60_000, logger: log });
      await bus.publish(TOPIC, results(3));
      const consumer = await ingestor(bus);
      await eventually(() => consumer.handled.length === 3, 'the results');
      let answered = 0;
      watching.whenHandled(() => answered++);

      await watching.look();
      expect(answered).toBe(0);
      expect(watching.waiting).toBe(1);
      down = false;
      await watching.look();
      expect(answered).toBe(1);
      watching.stop();
      await consumer.stop();
    });
  });

  describe('when nobody looks by hand', () => {
    it('looks by itself while an attempt waits', async () => {
      const periodic = new IngestWatch({ bus, topic: TOPIC, groupId: INGESTOR, periodMs: 10, logger: log });
      await bus.publish(TOPIC, results(3));
      const consumer = await ingestor(bus);
      let answered = 0;
      periodic.whenHandled(() => answered++);
      await eventually(() => answered === 1, 'the answer');
      expect(periodic.waiting).toBe(0);
      periodic.stop();
      await consumer.stop();
    });
  });
});

describe('a lingering LeaseKeeper', () => {
  let server: http.Server;
  let apiUrl: string;
  let heartbeats = 0;
  let bus: InProcessBus;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        heartbeats++;
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ leaseExpiresAt: new Date(Date.now() + 60_000).toISOString(), cancelRequested: false }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  beforeEach(async () => {
    heartbeats = 0;
    bus = new InProcessBus();
    await bus.ensureTopics([{ topic: TOPIC, partitions: 3 }]);
  });
  afterEach(() => bus.close());

  function keeperFor(client: ControlPlaneClient): LeaseKeeper {
    const claim = {
      executionId: 'e-1',
      attemptId: 'a-1',
      workerId: 'w-1',
      fencingToken: 1,
      leaseExpiresAt: new Date(Date.now() + 60_000).toISOString(),
      heartbeatIntervalMs: 20,
    };
    return new LeaseKeeper(client, claim, new AbortController(), log);
  }

  it('keeps heartbeating while the ingestor has not handled its result', async () => {
    const client = new ControlPlaneClient(apiUrl, 'token');
    const watch = new IngestWatch({ bus, topic: TOPIC, groupId: INGESTOR, periodMs: 5, logger: log });
    await bus.publish(TOPIC, results(1)); // the terminal result, which nobody consumes
    const keeper = keeperFor(client);
    keeper.start();
    keeper.linger(60_000, watch);
    await eventually(() => heartbeats >= 3, 'three heartbeats');
    keeper.stop();
    expect(watch.waiting).toBe(0); // stopping let go of the watch
    watch.stop();
    client.close();
  });

  it('leaves no timer behind once stopped, so nothing holds the attempt for the rest of its bound', async () => {
    const client = new ControlPlaneClient(apiUrl, 'token');
    jest.useFakeTimers();
    try {
      const keepers = Array.from({ length: 5 }, () => keeperFor(client));
      for (const keeper of keepers) {
        keeper.start();
        keeper.linger(60_000);
      }
      expect(jest.getTimerCount()).toBe(10); // a heartbeat and the bound each
      for (const keeper of keepers) keeper.stop();
      expect(jest.getTimerCount()).toBe(0);
    } finally {
      jest.useRealTimers();
      client.close();
    }
  });

  it('stops heartbeating once the ingestor has handled its result, without asking the control plane', async () => {
    const client = new ControlPlaneClient(apiUrl, 'token');
    const watch = new IngestWatch({ bus, topic: TOPIC, groupId: INGESTOR, periodMs: 60_000, logger: log });
    await bus.publish(TOPIC, results(1));
    const consumer = await ingestor(bus);
    await eventually(() => consumer.handled.length === 1, 'the result handled');
    const keeper = keeperFor(client);
    keeper.start();
    keeper.linger(60_000, watch);
    await watch.look();
    const before = heartbeats;
    // Ten heartbeat intervals: a keeper that still ran would have sent some.
    await sleep(200);
    expect(heartbeats).toBe(before);
    watch.stop();
    client.close();
    await consumer.stop();
  });
});
