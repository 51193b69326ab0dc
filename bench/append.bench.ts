import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PostgresEventStore } from '../src/event-store/postgres/postgres-event-store.js';
import { PgSqlClient } from '../src/postgres/pg-sql-client.js';
import { PgliteSqlClient } from '../src/postgres/pglite-sql-client.js';
import type { SqlClient } from '../src/postgres/sql-client.port.js';
import { createTestDatabase, startPostgresServer } from '../test/support/postgres-server.js';

/**
 * Append throughput of the Postgres event store beside a bare baseline measured in the same
 * run: single-row insert transactions through the same driver, at the same concurrency, into
 * a table shaped like the events table. Prints one JSON document on stdout; progress on stderr.
 */

const CELL_MS = Number(process.env.BENCH_CELL_MS ?? 5_000);
const WARMUP_MS = 500;
const STREAMS_PER_WRITER = 16;

interface Figures {
  appendsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  operations: number;
}

type Operation = (writer: number) => Promise<void>;

const BASELINE_TABLE = `create table if not exists bench_baseline (
  transaction_id xid8 not null default pg_current_xact_id(),
  seq bigserial primary key,
  stream_id text not null,
  event_id uuid not null unique,
  type text not null,
  data jsonb not null,
  metadata jsonb not null,
  recorded_at timestamptz not null default now()
)`;

// The alternative the store does not take: NOTIFY inside the append's own transaction.
const NOTIFY_INSIDE_APPEND = `create or replace function bench_append_notify(text, text, bigint, jsonb)
  returns table (conflict boolean, actual_revision bigint, next_revision bigint, position_xid text, position_seq bigint)
  language sql as $$ select pg_notify('flostra_events', ''); select * from event_store.append($1, $2, $3, $4) $$`;

const ROUNDS = 5;

interface Sample {
  latencies: number[];
  elapsedMs: number;
}

async function measure(writers: number, durationMs: number, operation: Operation): Promise<Sample> {
  const latencies: number[] = [];
  const started = performance.now();
  const deadline = started + durationMs;
  await Promise.all(
    Array.from({ length: writers }, async (_, writer) => {
      while (performance.now() < deadline) {
        const before = performance.now();
        await operation(writer);
        latencies.push(performance.now() - before);
      }
    }),
  );
  return { latencies, elapsedMs: performance.now() - started };
}

/**
 * Measures the variants in interleaved slices (A B C A B C ...) so that drift over the run
 * (checkpoints, table growth, a noisy neighbour) falls on all of them alike.
 */
async function cells(writers: number, variants: Operation[]): Promise<Figures[]> {
  for (const operation of variants) await measure(writers, WARMUP_MS, operation);
  const samples = variants.map((): Sample => ({ latencies: [], elapsedMs: 0 }));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [index, operation] of variants.entries()) {
      const sample = await measure(writers, CELL_MS / ROUNDS, operation);
      samples[index].latencies.push(...sample.latencies);
      samples[index].elapsedMs += sample.elapsedMs;
    }
  }
  return samples.map(figures);
}

function figures({ latencies, elapsedMs }: Sample): Figures {
  latencies.sort((a, b) => a - b);
  const percentile = (p: number) => round(latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? 0, 3);
  return {
    appendsPerSec: round((latencies.length / elapsedMs) * 1000, 0),
    p50Ms: percentile(0.5),
    p99Ms: percentile(0.99),
    operations: latencies.length,
  };
}

/** Each writer appends one event at a time to its own streams, at the exact expected revision. */
function storeAppends(append: (streamId: string, expected: number | 'no_stream', payload: unknown) => Promise<void>): Operation {
  const run = randomUUID().slice(0, 8);
  const revisions = new Map<string, number>();
  const counters = new Map<number, number>();
  return async (writer) => {
    const n = counters.get(writer) ?? 0;
    counters.set(writer, n + 1);
    const streamId = `bench-${run}-w${writer}-s${n % STREAMS_PER_WRITER}`;
    const revision = revisions.get(streamId);
    await append(streamId, revision === undefined ? 'no_stream' : revision, { writer, n });
    revisions.set(streamId, (revision ?? -1) + 1);
  };
}

function baselineInserts(client: SqlClient): Operation {
  const run = randomUUID().slice(0, 8);
  return async (writer) => {
    await client.query('insert into bench_baseline (stream_id, event_id, type, data, metadata) values ($1, $2, $3, $4::jsonb, $5::jsonb)', [
      `bench-${run}-w${writer}`,
      randomUUID(),
      'BenchmarkEventAppended',
      JSON.stringify({ writer }),
      '{}',
    ]);
  };
}

function viaStore(store: PostgresEventStore): Operation {
  return storeAppends(async (streamId, expectedRevision, data) => {
    await store.appendToStream(streamId, [{ id: randomUUID(), type: 'BenchmarkEventAppended', data }], { expectedRevision });
  });
}

function viaNotifyInsideAppend(client: SqlClient): Operation {
  return storeAppends(async (streamId, expected, data) => {
    const [kind, revision] = expected === 'no_stream' ? ['no_stream', null] : ['exact', expected];
    const events = JSON.stringify([{ id: randomUUID(), type: 'BenchmarkEventAppended', data }]);
    const { rows } = await client.query<{ conflict: boolean }>('select * from bench_append_notify($1, $2, $3, $4::jsonb)', [
      streamId,
      kind,
      revision,
      events,
    ]);
    if (rows[0]?.conflict !== false) throw new Error(`unexpected conflict on ${streamId}`);
  });
}

function compare(store: Figures, baseline: Figures) {
  return { store, baseline, ratio: round(store.appendsPerSec / baseline.appendsPerSec, 2) };
}

async function benchPostgres(serverUrl: string) {
  const url = await createTestDatabase('bench_append', serverUrl);
  const results = [];
  for (const writers of [1, 8, 32]) {
    const client = new PgSqlClient({ connectionString: url, max: writers });
    const store = await PostgresEventStore.open(client);
    await client.query(BASELINE_TABLE);
    await client.query(NOTIFY_INSIDE_APPEND);
    log(`postgres, ${writers} writers`);
    const [baseline, appends, notifyInside] = await cells(writers, [
      baselineInserts(client),
      viaStore(store),
      viaNotifyInsideAppend(client),
    ]);
    results.push({ writers, ...compare(appends, baseline), notifyInsideAppend: compare(notifyInside, baseline) });
    await store.close();
    await client.close();
  }
  const facts = new PgSqlClient({ connectionString: url, max: 1 });
  const { rows } = await facts.query<{ version: string; fsync: string; synchronous_commit: string }>(
    `select current_setting('server_version') as version, current_setting('fsync') as fsync, current_setting('synchronous_commit') as synchronous_commit`,
  );
  await facts.close();
  return { server: rows[0], results };
}

async function benchPglite() {
  const dataDir = mkdtempSync(join(tmpdir(), 'flostra-bench-pglite-'));
  try {
    const client = await PgliteSqlClient.open(dataDir);
    const store = await PostgresEventStore.open(client);
    await client.query(BASELINE_TABLE);
    const results = [];
    for (const writers of [1, 8]) {
      log(`pglite, ${writers} writers`);
      const [baseline, appends] = await cells(writers, [baselineInserts(client), viaStore(store)]);
      results.push({ writers, ...compare(appends, baseline) });
    }
    const { rows } = await client.query<{ version: string }>(`select current_setting('server_version') as version`);
    await store.close();
    await client.close();
    return { storage: 'temporary data directory on disk (the embedded default mode)', version: rows[0]?.version, results };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const server = await startPostgresServer();
  try {
    const postgres = await benchPostgres(server.url);
    const pglite = await benchPglite();
    const report = {
      benchmark: 'single-event appends to distinct streams, expected revision exact; baseline: bare single-row insert transactions',
      cellSeconds: CELL_MS / 1000,
      cellSlices: `${ROUNDS} slices per cell, interleaved with the other variants of the same row`,
      machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model, node: process.version, postgres: postgres.server },
      postgres: postgres.results,
      pglite,
    };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } finally {
    await server.stop();
  }
}

function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

function log(message: string): void {
  process.stderr.write(`bench: ${message}\n`);
}

await main();
