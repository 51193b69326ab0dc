import type { oas31 } from 'zod-openapi';
import { anchorOf, fieldRows, type FieldRow, type JsonSchema, notesOf, typeText } from './schema-fields.js';

/**
 * docs/api-reference.md from the OpenAPI document: every operation (method, path, summary,
 * roles, parameters, request body fields, responses with their schemas and error codes), then
 * every named schema. A small renderer of our own: no maintained one is installed, and adding a
 * dependency for this was not an option.
 */
export function renderApiReference(document: oas31.OpenAPIObject): string {
  const operations = operationsOf(document);
  const lines: string[] = [
    `# ${document.info.title} reference`,
    '',
    `Version ${document.info.version}, OpenAPI ${document.openapi}. Generated from the code by \`npm run docs:openapi\` (with [openapi.json](openapi.json)); ` +
      'do not edit it by hand: a test fails when it differs from what the code generates.',
    '',
    document.info.description ?? '',
    '',
    ...authentication(document),
    '## Operations',
    '',
    table(
      ['Operation', 'Method and path', 'Summary', 'Access'],
      operations.map(({ method, path, operation }) => [
        `[${operation.operationId}](#${operationAnchor(operation)})`,
        `\`${method.toUpperCase()} ${path}\``,
        cell(operation.summary ?? ''),
        accessOf(operation),
      ]),
    ),
    '',
  ];
  for (const tag of document.tags ?? []) {
    const tagged = operations.filter(({ operation }) => operation.tags?.[0] === tag.name);
    if (tagged.length === 0) continue;
    lines.push(`## ${tag.name}`, '', tag.description ?? '', '');
    for (const entry of tagged) lines.push(...renderOperation(entry));
  }
  lines.push('## Schemas', '');
  for (const [name, schema] of Object.entries(document.components?.schemas ?? {})) lines.push(...renderSchema(name, schema as JsonSchema));
  return `${lines
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trimEnd()}\n`;
}

interface OperationEntry {
  method: string;
  path: string;
  operation: oas31.OperationObject;
}

const METHODS = ['get', 'put', 'post', 'patch', 'delete'] as const;

function operationsOf(document: oas31.OpenAPIObject): OperationEntry[] {
  const entries: OperationEntry[] = [];
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    for (const method of METHODS) {
      const operation = item[method];
      if (operation !== undefined) entries.push({ method, path, operation });
    }
  }
  return entries;
}

function authentication(document: oas31.OpenAPIObject): string[] {
  const schemes = Object.entries(document.components?.securitySchemes ?? {}) as [string, oas31.SecuritySchemeObject][];
  return [
    '## Authentication and errors',
    '',
    ...schemes.map(([name, scheme]) => `- \`${name}\` (${scheme.type} ${scheme.scheme ?? ''}): ${scheme.description ?? ''}`),
    '- Every error is a [Problem](#schema-problem) (`application/problem+json`) with a stable `code`; each operation lists the codes it can answer, by status.',
    '',
  ];
}

function operationAnchor(operation: oas31.OperationObject): string {
  return `operation-${(operation.operationId ?? '').toLowerCase()}`;
}

function accessOf(operation: oas31.OperationObject): string {
  const requirement = operation.security?.[0];
  if (requirement === undefined) return 'public';
  return Object.entries(requirement)
    .map(([scheme, roles]) => (roles.length > 0 ? `${scheme}: ${roles.map((role) => `\`${role}\``).join(', ')}` : scheme))
    .join('; ');
}

function renderOperation({ method, path, operation }: OperationEntry): string[] {
  const lines = [
    `<a id="${operationAnchor(operation)}"></a>`,
    `### ${operation.summary ?? operation.operationId}`,
    '',
    `\`${method.toUpperCase()} ${path}\` — \`${operation.operationId}\``,
    '',
  ];
  if (operation.description) lines.push(operation.description, '');
  const parameters = (operation.parameters ?? []) as oas31.ParameterObject[];
  if (parameters.length > 0) {
    lines.push(
      '**Parameters**',
      '',
      table(
        ['Name', 'In', 'Type', 'Required', 'Description'],
        parameters.map((parameter) => [
          `\`${parameter.name}\``,
          parameter.in,
          typeText(parameter.schema),
          parameter.required ? 'yes' : 'no',
          [cell(parameter.description ?? ''), notesOf({ ...(parameter.schema as JsonSchema), description: undefined })]
            .filter(Boolean)
            .join(' '),
        ]),
      ),
      '',
    );
  }
  const body = operation.requestBody as oas31.RequestBodyObject | undefined;
  if (body !== undefined) {
    for (const [mediaType, media] of Object.entries(body.content)) {
      lines.push(
        `**Request body** (\`${mediaType}\`, ${body.required ? 'required' : 'optional: no body reads as `{}`'}): ${typeText(media.schema)}`,
        '',
      );
      lines.push(...fieldsTable(media.schema));
    }
  }
  lines.push('**Responses**', '');
  const responses = Object.entries(operation.responses ?? {}) as [string, oas31.ResponseObject][];
  lines.push(
    table(
      ['Status', 'Content', 'Body', 'Description'],
      responses.map(([status, response]) => {
        const [mediaType, media] = Object.entries(response.content ?? {})[0] ?? ['', undefined];
        return [status, mediaType ? `\`${mediaType}\`` : 'none', bodyText(media), cell(response.description)];
      }),
    ),
    '',
  );
  for (const [status, response] of responses) {
    const media = Object.values(response.content ?? {})[0];
    const rows = media?.schema === undefined ? [] : fieldsTable(media.schema);
    if (rows.length > 0 && !status.startsWith('4') && !status.startsWith('5')) lines.push(`Fields of the ${status} body:`, '', ...rows);
  }
  return lines;
}

function bodyText(media: oas31.MediaTypeObject | undefined): string {
  if (media === undefined) return '';
  const events = (media as Record<string, unknown>)['x-sse-data'];
  if (events !== undefined) return `events of ${typeText(events)}`;
  const schema = media.schema as JsonSchema | undefined;
  const allOf = schema?.['allOf'];
  if (Array.isArray(allOf)) {
    const codes = ((allOf[1] as JsonSchema | undefined)?.['properties'] as Record<string, JsonSchema> | undefined)?.['code']?.['enum'];
    return `${typeText(allOf[0])}${Array.isArray(codes) ? ` (code ${codes.map((c) => `\`${String(c)}\``).join(', ')})` : ''}`;
  }
  return typeText(schema);
}

function fieldsTable(schema: unknown): string[] {
  const rows = fieldRows(schema);
  if (rows.length === 0) return [];
  return [table(['Field', 'Type', 'Required', 'Notes'], rows.map(fieldCells)), ''];
}

function fieldCells(row: FieldRow): string[] {
  return [`\`${row.name}\``, row.type, row.required ? 'yes' : 'no', row.notes];
}

function renderSchema(name: string, schema: JsonSchema): string[] {
  const lines = [`<a id="${anchorOf(name)}"></a>`, `### ${name}`, ''];
  const description = typeof schema['description'] === 'string' ? schema['description'] : '';
  if (description) lines.push(description, '');
  const rows = fieldRows(schema);
  if (rows.length > 0) lines.push(table(['Field', 'Type', 'Required', 'Notes'], rows.map(fieldCells)), '');
  else lines.push(`${typeText(schema)} ${notesOf({ ...schema, description: undefined })}`.trim(), '');
  return lines;
}

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\r?\n/g, '<br>');
}

function table(header: string[], rows: string[][]): string {
  return [`| ${header.join(' | ')} |`, `| ${header.map(() => '---').join(' | ')} |`, ...rows.map((row) => `| ${row.join(' | ')} |`)].join(
    '\n',
  );
}
