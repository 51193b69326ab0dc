// DBOS's side of bench:peers (bench/peers.bench.ts): the diamond as a DBOS Transact workflow of
// four no-op steps (DBOS.runStep): a, then b and c concurrently, then d, checkpointed in the
// system database (a real PostgreSQL the benchmark starts). A DBOS application is a library in
// the application's own process; this one serves the workflow over HTTP on 127.0.0.1 only,
// POST /diamond answering when the workflow has finished, so the benchmark reaches every
// system the same way: one HTTP request per execution.
// Environment: DBOS_SYSTEM_DATABASE_URL, PORT (0 for a free one). First stdout line: `ready <port>`.
import http from 'node:http';
import { DBOS } from '@dbos-inc/dbos-sdk';

const noop = async () => null;

const diamond = DBOS.registerWorkflow(
  async () => {
    await DBOS.runStep(noop, { name: 'a' });
    const parallel = await Promise.allSettled([DBOS.runStep(noop, { name: 'b' }), DBOS.runStep(noop, { name: 'c' })]);
    for (const outcome of parallel) if (outcome.status === 'rejected') throw outcome.reason;
    await DBOS.runStep(noop, { name: 'd' });
    return 'done';
  },
  { name: 'diamond' },
);

DBOS.setConfig({
  name: 'peers-diamond',
  applicationVersion: '0.1.0',
  systemDatabaseUrl: process.env.DBOS_SYSTEM_DATABASE_URL,
  logLevel: 'error',
});
await DBOS.launch();

const server = http.createServer((request, response) => {
  request.resume();
  if (request.method !== 'POST' || request.url !== '/diamond') {
    response.writeHead(404).end();
    return;
  }
  diamond().then(
    (result) => response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(result)),
    (error) => response.writeHead(500).end(String(error)),
  );
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  process.stdout.write(`ready ${server.address().port}\n`);
});
process.once('SIGTERM', () => {
  server.close();
  DBOS.shutdown().finally(() => process.exit(0));
});
