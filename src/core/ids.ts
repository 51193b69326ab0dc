import { createHash, randomUUID } from 'node:crypto';

/** The one source of ids. Handlers put ids into command metadata; deciders never make them. */
export interface IdGenerator {
  uuid(): string;
}

export const ID_GENERATOR = Symbol('IdGenerator');

export const randomIds: IdGenerator = { uuid: () => randomUUID() };

/** Namespace of every name-based uuid Flostra derives. */
export const FLOSTRA_NAMESPACE = '6f3c2a8e-4d1b-5e7f-9a0c-1b2d3e4f5a6b';

/** RFC 4122 version-5 (SHA-1, name-based) uuid: the same name always yields the same id. */
export function uuidV5(name: string, namespace: string = FLOSTRA_NAMESPACE): string {
  const ns = Buffer.from(namespace.replace(/-/g, ''), 'hex');
  const hash = createHash('sha1').update(ns).update(name, 'utf8').digest();
  const bytes = hash.subarray(0, 16);
  bytes[6] = (bytes[6] & 0x0f) | 0x50;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Workspace ids, workflow names and node ids share one alphabet: 1-64 of `[A-Za-z0-9_-]`. */
export const IDENTIFIER_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
