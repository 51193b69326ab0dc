import { readFileSync } from 'node:fs';
import { basename, extname } from 'node:path';
import { usageError } from './errors.js';

const IDENTIFIER = /^[A-Za-z0-9_-]{1,64}$/;

export interface WorkflowFile {
  /** The workflow's name: `--name`, else the file's `name` member, else the file's base name. */
  name: string;
  /** The graph to publish: the file without its `name` member. */
  graph: Record<string, unknown>;
}

/** Parses a workflow document: YAML for `.yaml`/`.yml`, JSON for `.json`, else JSON and then YAML. */
export async function parseWorkflowText(text: string, path: string): Promise<unknown> {
  const extension = extname(path).toLowerCase();
  const asJson = () => JSON.parse(text) as unknown;
  const asYaml = async () => {
    // Loaded only for YAML files: the other commands start without it.
    const { parse } = await import('yaml');
    return parse(text) as unknown;
  };
  try {
    if (extension === '.json') return asJson();
    if (extension === '.yaml' || extension === '.yml') return await asYaml();
    try {
      return asJson();
    } catch {
      return await asYaml();
    }
  } catch (error) {
    throw usageError(`${path} is not valid ${extension === '.json' ? 'JSON' : 'JSON or YAML'}: ${(error as Error).message}`);
  }
}

/** Reads a workflow file and names it. */
export async function readWorkflowFile(path: string, nameFlag: string | undefined): Promise<WorkflowFile> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw usageError(`cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  const document = await parseWorkflowText(text, path);
  if (document === null || typeof document !== 'object' || Array.isArray(document))
    throw usageError(`${path} must hold a workflow object ({ nodes, edges, … })`);
  const { name: named, ...graph } = document as Record<string, unknown>;
  if (named !== undefined && typeof named !== 'string') throw usageError(`${path}: "name" must be a string`);
  const fromFileName = basename(path, extname(path));
  const name = nameFlag ?? named ?? fromFileName;
  if (!IDENTIFIER.test(name))
    throw usageError(`workflow name "${name}" is not 1-64 characters of A-Z a-z 0-9 _ - (give one with --name or a "name" member)`);
  return { name, graph };
}

/** `--input`: inline JSON, or `@file` holding JSON (or YAML for .yaml/.yml). An object is required. */
export async function readInput(raw: string | undefined): Promise<Record<string, unknown> | undefined> {
  if (raw === undefined) return undefined;
  let value: unknown;
  if (raw.startsWith('@')) {
    const path = raw.slice(1);
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      throw usageError(`cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
    value = await parseWorkflowText(text, path);
  } else {
    try {
      value = JSON.parse(raw);
    } catch (error) {
      throw usageError(`--input is not valid JSON: ${(error as Error).message} (use @FILE to read it from a file)`);
    }
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw usageError('--input must be a JSON object');
  return value as Record<string, unknown>;
}
