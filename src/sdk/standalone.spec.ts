import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * `flostra/worker` runs in users' processes, which have none of the server's dependencies: its
 * modules import Node's built-ins (`node:` specifiers) and each other, nothing else. (The
 * dependency-cruiser rule `the-worker-sdk-stands-alone` guards the imports of server code too.)
 */
describe('the worker SDK', () => {
  const folder = fileURLToPath(new URL('.', import.meta.url));
  const modules = readdirSync(folder).filter((name) => name.endsWith('.ts') && !name.endsWith('.spec.ts'));

  it.each(modules)('%s imports only node: built-ins and the SDK itself', (name) => {
    const source = readFileSync(join(folder, name), 'utf8');
    const specifiers = [...source.matchAll(/(?:^|\n)\s*(?:import|export)\b[^;]*?from\s+'([^']+)'/g)].map((m) => m[1]);
    const dynamic = [...source.matchAll(/\bimport\(\s*'([^']+)'\s*\)|\brequire\(\s*'([^']+)'\s*\)/g)].map((m) => m[1] ?? m[2]);
    const foreign = [...specifiers, ...dynamic].filter((s) => !s.startsWith('node:') && !/^\.\/[\w-]+\.js$/.test(s));
    expect(foreign).toEqual([]);
  });

  it('has its modules', () => {
    expect(modules).toEqual(expect.arrayContaining(['worker.ts', 'task-worker.ts', 'task-api.ts']));
  });
});
