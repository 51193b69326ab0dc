import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXIT } from './errors.js';
import { readInput, readWorkflowFile } from './workflow-file.js';

describe('workflow files', () => {
  let dir: string;
  const file = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'flostra-files-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const graph = { nodes: [{ id: 'a', type: 'noop' }], edges: [] };

  it('reads YAML, named by its "name" member, which is not sent', async () => {
    const path = file('any.yaml', 'name: orders\nnodes:\n  - id: a\n    type: noop\nedges: []\n');
    expect(await readWorkflowFile(path, undefined)).toEqual({ name: 'orders', graph });
  });

  it('reads JSON, named by --name over its "name" member, else by the file name', async () => {
    const named = file('x.json', JSON.stringify({ name: 'inside', ...graph }));
    expect((await readWorkflowFile(named, 'flagged')).name).toBe('flagged');
    expect((await readWorkflowFile(named, undefined)).name).toBe('inside');
    const unnamed = file('billing-run.json', JSON.stringify(graph));
    expect(await readWorkflowFile(unnamed, undefined)).toEqual({ name: 'billing-run', graph });
  });

  it('reads a file without a known extension as JSON, else YAML', async () => {
    expect((await readWorkflowFile(file('wf1', JSON.stringify(graph)), 'wf')).graph).toEqual(graph);
    expect((await readWorkflowFile(file('wf2', 'nodes: [{ id: a, type: noop }]\nedges: []\n'), 'wf')).graph).toEqual(graph);
  });

  it.each([
    ['broken JSON', 'bad.json', '{ "nodes": '],
    ['broken YAML', 'bad.yaml', 'nodes: [\n'],
    ['a list instead of a workflow', 'list.yaml', '- a\n- b\n'],
    ['a name that is no identifier', 'n.json', JSON.stringify({ name: 'has space', ...graph })],
  ])('refuses %s as a usage error', async (_what, name, text) => {
    await expect(readWorkflowFile(file(name, text), undefined)).rejects.toMatchObject({ exitCode: EXIT.usage });
  });

  it('reads --input inline or from @file, and wants an object', async () => {
    expect(await readInput('{"n":1}')).toEqual({ n: 1 });
    expect(await readInput(`@${file('in.yaml', 'n: 2\n')}`)).toEqual({ n: 2 });
    expect(await readInput(undefined)).toBeUndefined();
    await expect(readInput('"text"')).rejects.toMatchObject({ exitCode: EXIT.usage });
  });
});
