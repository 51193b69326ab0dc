/** Plain-text views of JSON Schemas (as OpenAPI 3.1 holds them), for the Markdown reference. */

export type JsonSchema = Record<string, unknown>;

const REF_PREFIX = '#/components/schemas/';

/** One row of a fields table: `nodes[].config.ms`, its type, whether required, and what it says. */
export interface FieldRow {
  name: string;
  type: string;
  required: boolean;
  notes: string;
}

export function anchorOf(schemaName: string): string {
  return `schema-${schemaName.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
}

const asSchema = (value: unknown): JsonSchema => (typeof value === 'object' && value !== null ? (value as JsonSchema) : {});
const code = (value: unknown): string => `\`${JSON.stringify(value)}\``;

/** A short type: `string (date-time)`, `array of [ExecutionView](#…)`, `"queued"`, `one of …`. */
export function typeText(value: unknown): string {
  const schema = asSchema(value);
  if (typeof schema['$ref'] === 'string') {
    const name = schema['$ref'].slice(REF_PREFIX.length);
    return `[${name}](#${anchorOf(name)})`;
  }
  if ('const' in schema) return code(schema['const']);
  if (Array.isArray(schema['enum'])) return schema['enum'].map(code).join(' \\| ');
  for (const key of ['anyOf', 'oneOf'] as const) {
    const options = schema[key];
    if (Array.isArray(options)) return [...new Set(options.map(typeText))].join(' \\| ');
  }
  if (Array.isArray(schema['allOf'])) return schema['allOf'].map(typeText).join(' & ');
  const type = schema['type'];
  if (Array.isArray(type)) return type.join(' \\| ');
  if (type === 'array') return `array of ${typeText(schema['items'])}`;
  if (type === 'object') {
    if (schema['properties'] === undefined && schema['additionalProperties'] !== undefined && schema['additionalProperties'] !== false) {
      return `map of ${typeText(schema['additionalProperties'])}`;
    }
    return 'object';
  }
  if (typeof type === 'string') return typeof schema['format'] === 'string' ? `${type} (${schema['format']})` : type;
  return 'any JSON';
}

/** Bounds, pattern, default and description of one schema, as a sentence. */
export function notesOf(value: unknown): string {
  const schema = asSchema(value);
  const notes: string[] = [];
  const bound = (key: string, text: string) => {
    const value = schema[key];
    // zod bounds every integer by the safe range: that says nothing worth a note.
    if (typeof value === 'number' && Math.abs(value) !== Number.MAX_SAFE_INTEGER) notes.push(`${text} ${value}`);
  };
  bound('minimum', '≥');
  bound('exclusiveMinimum', '>');
  bound('maximum', '≤');
  bound('exclusiveMaximum', '<');
  bound('minLength', 'length ≥');
  bound('maxLength', 'length ≤');
  bound('minItems', 'items ≥');
  bound('maxItems', 'items ≤');
  if (typeof schema['pattern'] === 'string') notes.push(`matches \`${schema['pattern']}\``);
  if ('default' in schema) notes.push(`default ${code(schema['default'])}`);
  const text = [typeof schema['description'] === 'string' ? schema['description'] : '', notes.length > 0 ? `(${notes.join(', ')})` : '']
    .filter(Boolean)
    .join(' ');
  return text.replace(/\r?\n/g, ' ').replace(/\|/g, '\\|');
}

/** The members of a union: its options, or the schema itself. */
function variantsOf(schema: JsonSchema): JsonSchema[] {
  const options = schema['oneOf'] ?? schema['anyOf'];
  return Array.isArray(options) ? options.map(asSchema) : [schema];
}

function isInlineObject(schema: JsonSchema): boolean {
  return schema['type'] === 'object' && typeof schema['properties'] === 'object';
}

/** The property whose `const` tells a union's variants apart, if they all have one. */
function discriminatorOf(variants: JsonSchema[]): string | null {
  const first = asSchema(variants[0]?.['properties']);
  for (const key of Object.keys(first)) {
    if (variants.every((variant) => 'const' in asSchema(asSchema(variant['properties'])[key]))) return key;
  }
  return null;
}

/**
 * Rows for an inline object's fields, nested ones flattened (`workflow.revision`,
 * `attempts[].status`). A union of objects lists the fields all variants share once, and
 * the others once per variant (`when type is "delay"`). `$ref`s link to their own section.
 */
export function fieldRows(value: unknown, prefix = '', depth = 0): FieldRow[] {
  const schema = asSchema(value);
  const variants = variantsOf(schema);
  if (variants.length > 1 && variants.every(isInlineObject)) return unionRows(variants, prefix, depth);
  if (!isInlineObject(schema)) return [];
  const required = new Set(Array.isArray(schema['required']) ? (schema['required'] as string[]) : []);
  const rows: FieldRow[] = [];
  for (const [key, property] of Object.entries(asSchema(schema['properties']))) {
    const name = `${prefix}${key}`;
    rows.push({ name, type: typeText(property), required: required.has(key), notes: notesOf(property) });
    if (depth < 4) rows.push(...nestedRows(asSchema(property), name, depth + 1));
  }
  return rows;
}

function nestedRows(property: JsonSchema, name: string, depth: number): FieldRow[] {
  if (property['type'] === 'array') return fieldRows(property['items'], `${name}[].`, depth);
  const nonNull = variantsOf(property).filter((variant) => variant['type'] !== 'null');
  return nonNull.length === 1 ? fieldRows(nonNull[0], `${name}.`, depth) : fieldRows(property, `${name}.`, depth);
}

function unionRows(variants: JsonSchema[], prefix: string, depth: number): FieldRow[] {
  const discriminator = discriminatorOf(variants);
  const perVariant = variants.map((variant) => fieldRows(variant, prefix, depth));
  const key = (row: FieldRow) => JSON.stringify(row);
  const shared = perVariant[0].filter((row) => perVariant.every((rows) => rows.some((other) => key(other) === key(row))));
  const sharedKeys = new Set(shared.map(key));
  const rows = [...shared];
  const constOf = (variant: JsonSchema) => asSchema(asSchema(variant['properties'])[discriminator ?? ''])['const'];
  if (discriminator !== null) {
    const name = `${prefix}${discriminator}`;
    rows.push({
      name,
      type: variants.map((variant) => code(constOf(variant))).join(' \\| '),
      required: true,
      notes: 'Selects which fields follow.',
    });
    sharedKeys.add(key(rows[rows.length - 1]));
  }
  perVariant.forEach((variantRows, index) => {
    const tag = discriminator === null ? `variant ${index + 1}` : `${discriminator} is ${code(constOf(variants[index]))}`;
    for (const row of variantRows) {
      if (sharedKeys.has(key(row)) || row.name === `${prefix}${discriminator}`) continue;
      rows.push({ ...row, notes: [`When ${tag}.`, row.notes].filter(Boolean).join(' ') });
    }
  });
  return rows;
}
