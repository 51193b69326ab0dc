import { hash, randomUUID } from 'node:crypto';

/** The one source of ids. Handlers put ids into command metadata; deciders never make them. */
export interface IdGenerator {
  uuid(): string;
}

export const ID_GENERATOR = Symbol('IdGenerator');

export const randomIds: IdGenerator = { uuid: () => randomUUID() };

/** Namespace of every name-based uuid Flostra derives. */
export const FLOSTRA_NAMESPACE = '6f3c2a8e-4d1b-5e7f-9a0c-1b2d3e4f5a6b';

/** Namespaces' 16 bytes, each parsed once (as latin1 text, one character per byte). */
const namespaceBytes = new Map<string, string>();

/** RFC 4122 version-5 (SHA-1, name-based) uuid: the same name always yields the same id. */
export function uuidV5(name: string, namespace: string = FLOSTRA_NAMESPACE): string {
  let ns = namespaceBytes.get(namespace);
  if (ns === undefined) {
    ns = Buffer.from(namespace.replace(/-/g, ''), 'hex').toString('latin1');
    if (namespaceBytes.size < 64) namespaceBytes.set(namespace, ns);
  }
  // One buffer and a one-shot digest: no hash object per id.
  const input = Buffer.allocUnsafe(16 + Buffer.byteLength(name, 'utf8'));
  input.write(ns, 0, 'latin1');
  input.write(name, 16, 'utf8');
  const bytes = hash('sha1', input, 'buffer');
  bytes[6] = (bytes[6] & 0x0f) | 0x50;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = bytes.toString('hex', 0, 16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Workspace ids, workflow names and node ids share one alphabet: 1-64 of `[A-Za-z0-9_-]`. */
export const IDENTIFIER_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
