import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { cpus } from 'node:os';
import { Kafka, logLevel, Partitioners, type Producer } from 'kafkajs';
import pg from 'pg';
import { startKafkaBroker } from '../test/support/kafka-broker.js';
import { createTestDatabase, startPostgresServer } from '../test/support/postgres-server.js';
import { STACK_WARMUP_SECONDS, closedLoop, post } from './bench-support.js';

/**
 * The floor under `bench:e2e`'s `full` mode: the same crossings a diamond execution makes,
 * with Flostra's logic taken out, on the same real Postgres and Kafka and the same libraries.
 * It answers "how fast could this design go on this machine", so that `bench:e2e`'s figures
 * can be read against it (and against DBOS's and Restate's, which make fewer crossings).
 *
 * Per execution, as `full` does it at 16 concurrent:
 * - the client POSTs a start over node:http (kept-alive); the server reads the workflow row and
 *   appends two events (group commit: appends made while one is out go in one statement);
 * - the dispatch is produced to Kafka (acks=-1, one request in flight, sends made while one is
 *   out go in the next), consumed by the worker, which claims over HTTP (one append);
 * - the worker produces one results message (the diamond's four pure nodes go in one), consumed
 *   by the ingestor, which appends the ten result events;
 * - a projector folds each append into an execution document and timeline rows, one statement
 *   per gathered batch; the client learns of the end from the ingestor's append.
 *
 * Left out, so the floor is low rather than fair: reading events back from the log (the
 * dispatcher, projector and completion here are handed the appended events in memory), checks
 * of expected revisions beyond a unique key, command decisions, validation, authentication,
 * NestJS and express, heartbeats, offset-commit ordering and every recovery path.
 * Prints one JSON document on stdout; progress on stderr.
 */

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const WARMUP_SECONDS = 2;
const CONCURRENCY = (process.env.BENCH_CONCURRENCY ?? '1,16,64').split(',').map(Number);
const log = (message: string) => process.stderr.write(`[bench:floor] ${message}\n`);

interface Row {
  stream: string;
  rev: number;
  type: string;
  data: string;
}

/** Work submitted while one batch is out goes together in the next: group commit, batched sends. */
class Batcher<T, R> {
  private queue: { item: T; resolve: (result: R) => void; reject: (error: unknown) => void }[] = [];
  private busy = false;

  constructor(private readonly flush: (items: T[]) => Promise<R[]>) {}

  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.busy) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.busy = true;
    while (this.queue.length > 0) {
      const batch = this.queue;
      this.queue = [];
      try {
        const results = await this.flush(batch.map((entry) => entry.item));
        batch.forEach((entry, index) => entry.resolve(results[index]));
      } catch (error) {
        for (const entry of batch) entry.reject(error);
      }
    }
    this.busy = false;
  }
}

const SCHEMA = `
  create table events (position bigserial primary key, stream text not null, rev int not null, type text not null, data jsonb not null, unique (stream, rev));
  create table workflows (name text primary key, definition jsonb not null);
  create table executions_view (id text primary key, doc jsonb not null, position bigint not null);
  create table timeline_view (position bigint primary key, execution text not null, type text not null, data jsonb not null);
  create table checkpoints (name text primary key, position bigint not null);
  insert into checkpoints values ('projector', 0);
`;

async function main() {
  const postgres = await startPostgresServer();
  const kafkaBroker = await startKafkaBroker({ reuseExisting: false });
  const url = await createTestDatabase('bench_floor', postgres.url);
  const pool = new pg.Pool({ connectionString: url, max: 20 });
  await pool.query(SCHEMA);
  const diamond = {
    nodes: ['a', 'b', 'c', 'd'].map((id) => ({ id, type: 'noop' })),
    edges: [
      ['a', 'b'],
      ['a', 'c'],
      ['b', 'd'],
      ['c', 'd'],
    ],
  };
  await pool.query('insert into workflows values ($1, $2)', ['diamond', JSON.stringify(diamond)]);

  // Appends: one statement for every append made while the previous one was out.
  const appender = new Batcher<Row[], number>(async (appends) => {
    const rows = appends.flat();
    const result = await pool.query<{ position: string }>({
      name: 'append',
      text: 'insert into events (stream, rev, type, data) select * from unnest($1::text[], $2::int[], $3::text[], $4::jsonb[]) returning position',
      values: [rows.map((r) => r.stream), rows.map((r) => r.rev), rows.map((r) => r.type), rows.map((r) => r.data)],
    });
    let index = 0;
    return appends.map((append) => Number(result.rows[(index += append.length) - 1].position));
  });

  // The projector: one statement per gathered batch (documents, timeline rows, checkpoint).
  const documents = new Map<string, Record<string, unknown>>();
  const projector = new Batcher<{ rows: Row[]; position: number }, void>(async (batches) => {
    const touched = new Map<string, Record<string, unknown>>();
    const timeline: (Row & { position: number })[] = [];
    for (const { rows, position: last } of batches) {
      for (const [index, row] of rows.entries()) {
        const id = row.stream;
        const doc = documents.get(id) ?? { id, status: 'running', nodes: {}, events: [] as unknown[] };
        (doc.events as unknown[]).push({ type: row.type, at: new Date().toISOString(), data: JSON.parse(row.data) as unknown });
        if (row.type === 'ExecutionSucceeded') doc.status = 'succeeded';
        documents.set(id, doc);
        touched.set(id, doc);
        timeline.push({ ...row, position: last - rows.length + 1 + index });
      }
    }
    const position = Math.max(...batches.map((b) => b.position));
    await pool.query({
      name: 'project',
      text: `with docs as (
               insert into executions_view (id, doc, position) select id, doc, $3 from unnest($1::text[], $2::jsonb[]) as t(id, doc)
               on conflict (id) do update set doc = excluded.doc, position = excluded.position),
             rows as (
               insert into timeline_view (position, execution, type, data) select * from unnest($4::bigint[], $5::text[], $6::text[], $7::jsonb[]))
             update checkpoints set position = $3 where name = 'projector'`,
      values: [
        [...touched.keys()],
        [...touched.values()].map((doc) => JSON.stringify(doc)),
        position,
        timeline.map((r) => r.position),
        timeline.map((r) => r.stream),
        timeline.map((r) => r.type),
        timeline.map((r) => r.data),
      ],
    });
    for (const [id, doc] of touched) if (doc.status === 'succeeded') documents.delete(id);
    return batches.map(() => undefined);
  });

  async function append(rows: Row[]): Promise<void> {
    const position = await appender.submit(rows);
    void projector.submit({ rows, position }).catch((error: unknown) => log(`projection failed: ${String(error)}`));
  }

  // Kafka: one producer (acks=-1, one request in flight), sends batched while one is out.
  const kafka = new Kafka({ clientId: 'floor', brokers: kafkaBroker.brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    topics: [
      { topic: 'floor.dispatch', numPartitions: 4 },
      { topic: 'floor.results', numPartitions: 4 },
    ],
    waitForLeaders: true,
  });
  await admin.disconnect();
  const producer: Producer = kafka.producer({
    idempotent: false,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
    createPartitioner: Partitioners.DefaultPartitioner,
  });
  await producer.connect();
  const publisher = new Batcher<{ topic: string; key: string; value: string }, void>(async (messages) => {
    const byTopic = new Map<string, { key: string; value: string }[]>();
    for (const m of messages) byTopic.set(m.topic, [...(byTopic.get(m.topic) ?? []), { key: m.key, value: m.value }]);
    await producer.sendBatch({ acks: -1, topicMessages: [...byTopic].map(([topic, msgs]) => ({ topic, messages: msgs })) });
    return messages.map(() => undefined);
  });

  async function consume(topic: string, handle: (value: Record<string, unknown>) => Promise<void>) {
    const consumer = kafka.consumer({ groupId: `floor-${topic}`, maxWaitTimeInMs: 1000 });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    // Handlers run concurrently; offsets are committed every 100 ms (kafkajs' autoCommit).
    await consumer.run({
      autoCommitInterval: 100,
      partitionsConsumedConcurrently: 4,
      eachBatch: async ({ batch }) => {
        for (const message of batch.messages) {
          void handle(JSON.parse(message.value!.toString()) as Record<string, unknown>).catch((error: unknown) =>
            log(`${topic} handler failed: ${String(error)}`),
          );
        }
      },
    });
    return consumer;
  }

  const waiters = new Map<string, () => void>();

  // The API: start and claim, on node:http with no framework.
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      void (async () => {
        const input = JSON.parse(body || '{}') as Record<string, string>;
        if (req.url === '/start') {
          const workflow = await pool.query({
            name: 'workflow',
            text: 'select definition from workflows where name = $1',
            values: ['diamond'],
          });
          const id = randomUUID();
          const attemptId = randomUUID();
          await append([
            {
              stream: id,
              rev: 0,
              type: 'ExecutionStarted',
              data: JSON.stringify({ workflow: workflow.rows[0].definition as unknown, input }),
            },
            { stream: id, rev: 1, type: 'AttemptScheduled', data: JSON.stringify({ attemptId, number: 1 }) },
          ]);
          // As from the log: the start's answer does not wait for the dispatch.
          void publisher
            .submit({ topic: 'floor.dispatch', key: id, value: JSON.stringify({ executionId: id, attemptId }) })
            .catch((error: unknown) => log(`dispatch failed: ${String(error)}`));
          res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ executionId: id }));
        } else {
          await append([
            {
              stream: input.executionId,
              rev: 2,
              type: 'AttemptClaimed',
              data: JSON.stringify({ attemptId: input.attemptId, workerId: 'w1', fencingToken: 1 }),
            },
          ]);
          res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(JSON.stringify({ fencingToken: 1, leaseExpiresAt: new Date(Date.now() + 30_000).toISOString() }));
        }
      })().catch((error: unknown) => res.writeHead(500).end(String(error)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const postJson = async (path: string, body: unknown): Promise<string> => {
    const answer = await post(`${base}${path}`, { 'content-type': 'application/json' }, JSON.stringify(body));
    if (answer.status >= 300) throw new Error(`${path} answered ${answer.status}: ${answer.body}`);
    return answer.body;
  };

  // The worker: claim over HTTP, run the four noop nodes, publish one results message.
  const workerConsumer = await consume('floor.dispatch', async (dispatch) => {
    await postJson('/claim', dispatch);
    const results = ['a', 'b', 'c', 'd'].map((nodeId) => ({ nodeId, output: {} }));
    await publisher.submit({
      topic: 'floor.results',
      key: dispatch.executionId as string,
      value: JSON.stringify({ ...dispatch, results }),
    });
  });
  // The ingestor: the ten result events in one append.
  const ingestorConsumer = await consume('floor.results', async (message) => {
    const id = message.executionId as string;
    const rows: Row[] = [];
    for (const result of message.results as { nodeId: string; output: unknown }[]) {
      rows.push({ stream: id, rev: 3 + rows.length, type: 'NodeStarted', data: JSON.stringify({ nodeId: result.nodeId }) });
      rows.push({ stream: id, rev: 3 + rows.length, type: 'NodeSucceeded', data: JSON.stringify(result) });
    }
    rows.push({ stream: id, rev: 3 + rows.length, type: 'AttemptSucceeded', data: JSON.stringify({ attemptId: message.attemptId }) });
    rows.push({ stream: id, rev: 3 + rows.length, type: 'ExecutionSucceeded', data: '{}' });
    await append(rows);
    waiters.get(id)?.();
    waiters.delete(id);
  });

  async function oneExecution(): Promise<number> {
    const started = performance.now();
    const { executionId } = JSON.parse(await postJson('/start', { input: {} })) as { executionId: string };
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`execution ${executionId} did not finish in 60 s`)), 60_000);
      waiters.set(executionId, () => {
        clearTimeout(timer);
        resolve();
      });
    });
    return performance.now() - started;
  }

  async function measure(concurrency: number, seconds: number) {
    const { processCpu, machineCpu, ...result } = await closedLoop(concurrency, seconds, oneExecution);
    return { ...result, cpuSecondsPerExecution: { nodeProcess: processCpu, wholeMachine: machineCpu } };
  }

  // The consumers are in their groups once a first execution gets through.
  log('waiting for the consumers to join');
  await oneExecution();
  log(`warming the stack up at 16 concurrent for ${STACK_WARMUP_SECONDS}s`);
  await measure(16, STACK_WARMUP_SECONDS);
  const results = [];
  for (const concurrency of CONCURRENCY) {
    log(`concurrency ${concurrency}, warm-up`);
    await measure(concurrency, WARMUP_SECONDS);
    log(`concurrency ${concurrency}, measuring ${SECONDS}s`);
    results.push(await measure(concurrency, SECONDS));
  }
  await workerConsumer.disconnect();
  await ingestorConsumer.disconnect();
  await producer.disconnect();
  server.close();
  await pool.end();
  await kafkaBroker.stop();
  await postgres.stop();
  process.stdout.write(
    JSON.stringify({
      benchmark:
        'the crossings of bench:e2e full mode without Flostra: node:http, pg, kafkajs on the same real Postgres and Kafka, closed loop',
      secondsPerCell: SECONDS,
      warmUpSeconds: { stackAt16: STACK_WARMUP_SECONDS, eachCell: WARMUP_SECONDS },
      machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model, node: process.version },
      results,
    }) + '\n',
  );
  process.exit(0);
}

main().catch((error: unknown) => {
  process.stderr.write(`bench:floor failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
