import type { oas31 } from 'zod-openapi';
import { TAG_DESCRIPTIONS } from './document-texts.js';

/**
 * A stable document: the same code always serializes to the same bytes, whatever order Nest
 * discovered the controllers in. Paths, schemas and responses are sorted; recursive schemas
 * that zod could only number (`__schema0`) get names.
 */
export function orderDocument(document: oas31.OpenAPIObject): oas31.OpenAPIObject {
  const named = nameRecursiveSchemas(document);
  const tagOrder = Object.keys(TAG_DESCRIPTIONS);
  return {
    openapi: named.openapi,
    info: named.info,
    servers: named.servers,
    tags: [...(named.tags ?? [])].sort((a, b) => rank(tagOrder, a.name) - rank(tagOrder, b.name) || a.name.localeCompare(b.name)),
    paths: sortKeys(named.paths ?? {}, {
      map: (item) => sortKeys(item as Record<string, oas31.OperationObject>, { order: METHOD_ORDER, map: orderOperation }),
    }),
    components: {
      ...(named.components ?? {}),
      schemas: sortKeys(named.components?.schemas ?? {}),
    },
  };
}

const METHOD_ORDER = ['get', 'put', 'post', 'patch', 'delete'];

function rank(order: readonly string[], key: string): number {
  const index = order.indexOf(key);
  return index === -1 ? order.length : index;
}

/** Keys in `order` first (in that order), then the rest by code point; values through `map`. */
function sortKeys<T, U = T>(
  record: Record<string, T>,
  options: { order?: readonly string[]; map?: (value: T) => U } = {},
): Record<string, U> {
  const { order = [], map = (value: T) => value as unknown as U } = options;
  const keys = Object.keys(record).sort((a, b) => rank(order, a) - rank(order, b) || (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(keys.map((key) => [key, map(record[key])]));
}

function orderOperation(operation: oas31.OperationObject): oas31.OperationObject {
  return { ...operation, responses: sortKeys(operation.responses ?? {}) };
}

/** Serialized as committed: 2-space JSON and a final newline. */
export function stringifyDocument(document: oas31.OpenAPIObject): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}

const NUMBERED = /^__schema\d+$/;
const REF_PREFIX = '#/components/schemas/';

/** Any JSON value, as zod renders `z.json()`: the one recursive schema the API has. */
function isJsonValue(schema: unknown, self: string): boolean {
  const ref = { $ref: `${REF_PREFIX}${self}` };
  const expected = {
    anyOf: [
      { type: 'string' },
      { type: 'number' },
      { type: 'boolean' },
      { type: 'null' },
      { type: 'array', items: ref },
      { type: 'object', propertyNames: { type: 'string' }, additionalProperties: ref },
    ],
  };
  return JSON.stringify(schema) === JSON.stringify(expected);
}

/** Every `z.json()` becomes `JsonValue`; another numbered schema is a contract to fix (give it an id). */
function nameRecursiveSchemas(document: oas31.OpenAPIObject): oas31.OpenAPIObject {
  const schemas = document.components?.schemas ?? {};
  const renames = new Map<string, string>();
  for (const [name, schema] of Object.entries(schemas)) {
    if (!NUMBERED.test(name)) continue;
    if (!isJsonValue(schema, name)) throw new Error(`the document has a schema without a name (${name}): give it one with .meta({ id })`);
    renames.set(name, 'JsonValue');
  }
  if (renames.size === 0) return document;
  let text = JSON.stringify(document);
  for (const [from, to] of renames) text = text.replaceAll(`"${REF_PREFIX}${from}"`, `"${REF_PREFIX}${to}"`);
  // The copies are now equal, each referring to `JsonValue`: one of them stays, by that name.
  const renamed = JSON.parse(text) as oas31.OpenAPIObject;
  const all = renamed.components!.schemas!;
  const kept = Object.fromEntries(Object.entries(all).filter(([name]) => !renames.has(name)));
  kept['JsonValue'] = all[[...renames.keys()][0]]!;
  renamed.components!.schemas = kept;
  return renamed;
}
