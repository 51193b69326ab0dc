// A Flostra task worker with the SDK: `npm run build`, then
//   FLOSTRA_TOKEN=<a task-worker token> node examples/typescript-worker/worker.mjs
// It runs the tasks of queue `greetings` in workspace `dev` (FLOSTRA_WORKSPACE, FLOSTRA_QUEUE),
// at most four at once, until SIGTERM or Ctrl-C. Outside this repository, `npm install` the
// package and import 'flostra/worker' the same way.
import { createTaskWorker, NonRetryableError } from 'flostra/worker';

if (!process.env.FLOSTRA_TOKEN) {
  process.stderr.write('FLOSTRA_TOKEN is required: a token with the task-worker role in the workspace\n');
  process.exit(1);
}

const worker = createTaskWorker({
  url: process.env.FLOSTRA_API_URL ?? 'http://127.0.0.1:3000',
  token: process.env.FLOSTRA_TOKEN ?? '',
  workspace: process.env.FLOSTRA_WORKSPACE ?? 'dev',
  queue: process.env.FLOSTRA_QUEUE ?? 'greetings',
  concurrency: Number(process.env.FLOSTRA_CONCURRENCY ?? 4),
  logger: console,
  // The task's input is what the node's `config.input` made of the node's input.
  async handler(input, ctx) {
    if (typeof input?.name !== 'string') throw new NonRetryableError('bad_input', 'input.name must be a string');
    await ctx.heartbeat({ stage: 'thinking' });
    // Slow work listens to ctx.signal: it fires on a cancel, a lost lease, or a shutdown.
    await new Promise((resolve, reject) => {
      const timer = setTimeout(resolve, 500);
      ctx.signal.addEventListener('abort', () => reject((clearTimeout(timer), ctx.signal.reason)), { once: true });
    });
    return { greeting: `hello ${input.name}`, attempt: ctx.attempt };
  },
});

worker.start();
await worker.done;
