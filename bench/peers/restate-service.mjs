// Restate's side of bench:peers (bench/peers.bench.ts): the diamond as a Restate service whose
// handler runs four durable no-op steps (ctx.run): a, then b and c in parallel
// (RestatePromise.all), then d. Served by the TypeScript SDK over HTTP/2 on 127.0.0.1 only;
// the benchmark registers it with the server's admin API and invokes it through the ingress
// (request-response: the call answers when the handler has finished).
// Environment: PORT (0 for a free one). First stdout line: `ready <port>`.
import http2 from 'node:http2';
import * as restate from '@restatedev/restate-sdk';

const noop = async () => null;

const diamond = restate.service({
  name: 'Diamond',
  handlers: {
    run: async (ctx) => {
      await ctx.run('a', noop);
      await restate.RestatePromise.all([ctx.run('b', noop), ctx.run('c', noop)]);
      await ctx.run('d', noop);
      return 'done';
    },
  },
});

const server = http2.createServer(restate.createEndpointHandler({ services: [diamond] }));
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  process.stdout.write(`ready ${server.address().port}\n`);
});
process.once('SIGTERM', () => {
  server.close();
  process.exit(0);
});
