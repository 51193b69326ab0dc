#!/usr/bin/env node
// `flostra`: the command-line client (docs/cli.md). A client only: it imports nothing of the
// server, so that it starts in a fraction of a second (.dependency-cruiser.cjs keeps it so).
import { createInterface } from 'node:readline';
import { EXIT } from './errors.js';
import type { Io } from './output.js';
import { run } from './run.js';

function ask(question: string): Promise<string> {
  const prompt = createInterface({ input: process.stdin, output: process.stderr });
  // Ctrl-C at the prompt is an interruption like anywhere else.
  prompt.on('SIGINT', () => process.exit(EXIT.interrupted));
  return new Promise((resolve) =>
    prompt.question(question, (answer) => {
      prompt.close();
      resolve(answer);
    }),
  );
}

process.once('SIGINT', () => process.exit(EXIT.interrupted));
const io: Io = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
  interactive: process.stdin.isTTY === true && process.stdout.isTTY === true,
  ask,
};
const code = await run(process.argv.slice(2), io, process.env);
// Exit once what was written has been handed over (pipes may be asynchronous), without waiting
// for idle keep-alive connections.
process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
