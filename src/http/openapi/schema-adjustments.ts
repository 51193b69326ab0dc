import { z } from 'zod';
import { createSchema, type CreateDocumentOptions, type oas31 } from 'zod-openapi';
import { UUID_PATTERN } from '../../core/ids.js';

/**
 * Where zod's JSON Schema needs help to say what the server does. Applied by the document
 * builder to every schema it renders; none of it changes a schema the code validates with.
 */

const REF_PREFIX = '#/components/schemas/';

/** A response schema with an id, and the schemas it refers to, as components. */
export function addOutputSchema(document: oas31.OpenAPIObject, schema: z.ZodType, options: CreateDocumentOptions): void {
  const { components } = createSchema(schema, { io: 'output', openapiVersion: '3.1.0', schemaRefPath: REF_PREFIX, opts: options });
  const existing = (document.components!.schemas ??= {});
  for (const [name, rendered] of Object.entries(components ?? {})) {
    if (existing[name] !== undefined && JSON.stringify(existing[name]) !== JSON.stringify(rendered)) {
      throw new Error(`the schema ${name} renders differently in an event stream than elsewhere`);
    }
    existing[name] = rendered;
  }
}

/**
 * - a case-insensitive pattern (JSON Schema patterns have no flags) is shown as what it means;
 * - a format zod also spells out as a long pattern keeps the format only;
 * - `typeKeeping` transforms are shown, in responses, as their input (JSON Schema cannot show a transform).
 */
export function schemaAdjustments(typeKeeping: ReadonlySet<unknown>): CreateDocumentOptions {
  return {
    override: ({ zodSchema, jsonSchema, io }) => {
      if (hasCaseInsensitivePattern(zodSchema)) showCaseInsensitive(jsonSchema);
      else if (patternsOf(zodSchema).length === 0 && FORMATS_WITHOUT_PATTERN.has(jsonSchema['format'] as string))
        delete jsonSchema['pattern'];
      if (io !== 'output' || !typeKeeping.has(zodSchema)) return;
      const input = (zodSchema._zod.def as { in?: z.ZodType }).in;
      if (input === undefined) throw new Error('typeKeepingTransforms lists a schema that is not a transform');
      const { $schema: _, ...shown } = z.toJSONSchema(input, { io: 'output' });
      Object.assign(jsonSchema, shown);
    },
  };
}

/** Formats zod also spells out as a long pattern: the format says it, the pattern is noise. */
const FORMATS_WITHOUT_PATTERN = new Set(['date-time', 'uuid']);

/** Regex checks of a string schema (`z.string().regex(…)`). */
function patternsOf(schema: z.core.$ZodType): RegExp[] {
  const checks = (schema._zod.def as { checks?: { _zod: { def: { format?: string; pattern?: RegExp } } }[] }).checks ?? [];
  return checks
    .map((check) => check._zod.def)
    .filter((def) => def.format === 'regex' && def.pattern !== undefined)
    .map((def) => def.pattern!);
}

function hasCaseInsensitivePattern(schema: z.core.$ZodType): boolean {
  return patternsOf(schema).some((pattern) => pattern.flags.includes('i'));
}

/**
 * JSON Schema patterns have no flags: a case-insensitive UUID becomes `format: uuid` (any case,
 * as RFC 9562 reads them), and no other case-insensitive pattern exists to be shown wrongly.
 */
function showCaseInsensitive(jsonSchema: Record<string, unknown>): void {
  if (jsonSchema['pattern'] !== UUID_PATTERN.source)
    throw new Error(`a case-insensitive pattern cannot be shown in JSON Schema: ${String(jsonSchema['pattern'])}`);
  delete jsonSchema['pattern'];
  jsonSchema['format'] = 'uuid';
}
