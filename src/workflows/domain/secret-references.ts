import type { ValidationIssue } from '../../core/errors.js';
import { formatPath } from './validation-issues.js';

/**
 * Secret references (docs/api.md, "Secrets"): `{{secret:NAME}}` inside the string fields of an
 * `http` node's config that travel to the server: the url, header values, and the strings of the
 * body at any depth. The graph keeps the reference text; the worker puts the value in when it
 * makes the call, and nowhere else.
 *
 * The grammar is strict so that a typo is refused at publish instead of being sent as text:
 * a reference is exactly `{{secret:` + NAME + `}}`, NAME being 1-128 of `A-Z a-z 0-9 _ . -`, with
 * no spaces. Any `{{`, optional spaces, `secret` in any case, optional spaces and `:` opens a
 * reference, and what follows must complete it; there is no escape for that text.
 */

const NAME = '[A-Za-z0-9_.-]{1,128}';
const REFERENCE = new RegExp(`\\{\\{secret:(${NAME})\\}\\}`, 'g');
const REFERENCE_AT = new RegExp(`\\{\\{secret:(${NAME})\\}\\}`, 'y');
const OPENING = /\{\{\s*secret\s*:/gi;

/** Node types whose config may reference secrets (only they are given values). */
export const SECRET_CAPABLE_NODE_TYPES: readonly string[] = ['http'];

/** The references in one string: the names of the valid ones, and the text of each invalid one. */
export interface ScannedText {
  readonly names: string[];
  readonly invalid: string[];
}

/** Finds the references in `text` (see the grammar above). */
export function scanSecretReferences(text: string): ScannedText {
  const names: string[] = [];
  const invalid: string[] = [];
  if (!text.includes('{{')) return { names, invalid };
  for (const opening of text.matchAll(OPENING)) {
    REFERENCE_AT.lastIndex = opening.index;
    const match = REFERENCE_AT.exec(text);
    if (match !== null) names.push(match[1]);
    else invalid.push(excerpt(text, opening.index));
  }
  return { names, invalid };
}

/** Replaces every reference in `text` by `valueOf(name)`; text without references is returned as is. */
export function substituteSecretReferences(text: string, valueOf: (name: string) => string): string {
  return text.includes('{{') ? text.replace(REFERENCE, (_reference, name: string) => valueOf(name)) : text;
}

/** True when `text` holds at least one valid reference. */
export function hasSecretReference(text: string): boolean {
  return scanSecretReferences(text).names.length > 0;
}

interface NodeLike {
  readonly type: string;
  readonly config?: unknown;
}

/** Names a node's config references, sorted, each once; none for a type that cannot use secrets. */
export function nodeSecretNames(node: NodeLike): string[] {
  if (!SECRET_CAPABLE_NODE_TYPES.includes(node.type)) return [];
  const names = new Set<string>();
  walkStrings(node.config, [], (text, path, isKey) => {
    if (!isKey && referenceMayStandAt(path)) for (const name of scanSecretReferences(text).names) names.add(name);
  });
  return [...names].sort();
}

/** Names the whole graph references (what a start checks and what the worker resolves), sorted, each once. */
export function referencedSecretNames(graph: { readonly nodes: readonly NodeLike[] }): string[] {
  const names = new Set<string>();
  for (const node of graph.nodes) for (const name of nodeSecretNames(node)) names.add(name);
  return [...names].sort();
}

const GRAMMAR = 'write {{secret:NAME}}, NAME being 1-128 characters of A-Z, a-z, 0-9, "_", "." or "-", without spaces';

/**
 * Every misplaced or malformed reference of a publish body, with the node id and the field's
 * path: a reference in a node type that cannot use secrets, outside the url, header values and
 * body strings, in an object key, or with bad syntax. Reads the body loosely, so a body that
 * fails the schema still gets these issues in the same answer.
 */
export function secretReferenceIssues(body: unknown): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const nodes = isRecord(body) && Array.isArray(body['nodes']) ? (body['nodes'] as unknown[]) : [];
  nodes.forEach((node, index) => {
    if (!isRecord(node) || node['config'] === undefined) return;
    const id = typeof node['id'] === 'string' ? node['id'] : `#${index}`;
    const capable = typeof node['type'] === 'string' && SECRET_CAPABLE_NODE_TYPES.includes(node['type']);
    walkStrings(node['config'], [], (text, path, isKey) => {
      const scanned = scanSecretReferences(text);
      if (scanned.names.length === 0 && scanned.invalid.length === 0) return;
      const at = formatPath(['nodes', index, 'config', ...path]);
      if (!capable) {
        const type = typeof node['type'] === 'string' ? `${node['type']} nodes` : 'this node';
        issues.push({ path: at, message: `node "${id}": secret references are only allowed in http nodes, not in ${type}` });
      } else if (isKey) {
        issues.push({ path: at, message: `node "${id}": secret references are not allowed in keys, only in values` });
      } else if (!referenceMayStandAt(path)) {
        issues.push({ path: at, message: `node "${id}": secret references are only allowed in the url, header values and body strings` });
      } else {
        for (const text of scanned.invalid) {
          issues.push({ path: at, message: `node "${id}": ${JSON.stringify(text)} is not a valid secret reference; ${GRAMMAR}` });
        }
      }
    });
  });
  return issues;
}

/** Inside an http node's config: the url, a header's value, or anywhere in the body. */
function referenceMayStandAt(path: readonly PropertyKey[]): boolean {
  const [field] = path;
  return (field === 'url' && path.length === 1) || (field === 'headers' && path.length === 2) || field === 'body';
}

/** Calls `visit` for every string value and every object key, with its path inside `value`. */
function walkStrings(value: unknown, path: PropertyKey[], visit: (text: string, path: PropertyKey[], isKey: boolean) => void): void {
  if (typeof value === 'string') {
    visit(value, path, false);
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => walkStrings(item, [...path, i], visit));
  } else if (isRecord(value)) {
    for (const [key, item] of Object.entries(value)) {
      visit(key, [...path, key], true);
      walkStrings(item, [...path, key], visit);
    }
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The reference as written, up to its closing braces (at most 48 characters), for the message. */
function excerpt(text: string, start: number): string {
  const close = text.indexOf('}}', start);
  const end = close === -1 ? text.length : close + 2;
  return end - start <= 48 ? text.slice(start, end) : `${text.slice(start, start + 47)}…`;
}
