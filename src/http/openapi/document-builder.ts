import { z } from 'zod';
import {
  createDocument,
  type oas31,
  type ZodOpenApiOperationObject,
  type ZodOpenApiPathsObject,
  type ZodOpenApiResponsesObject,
} from 'zod-openapi';
import type { ErrorCode } from '../../core/errors.js';
import { statusOf } from '../problem.js';
import { PROBLEM_CONTENT_TYPE } from '../problem.js';
import { orderDocument } from './document-order.js';
import { addOutputSchema, schemaAdjustments } from './schema-adjustments.js';
import { problemSchema, validationIssueSchema } from './problem.schema.js';
import { answerableCodes, type RouteAccess, type RouteContract, type RouteResponse } from './route-contract.js';
import { type DiscoveredRoute, toOpenApiPath } from './route-discovery.js';
import { PARAMETER_DESCRIPTIONS, PROBLEM_MEANINGS, SCHEMA_DESCRIPTIONS, TAG_DESCRIPTIONS } from './document-texts.js';

export type OpenApiDocument = oas31.OpenAPIObject;

export interface DocumentInfo {
  /** The package's version. */
  version: string;
}

export const BEARER_SCHEME = 'bearerAuth';
const REF_PREFIX = '#/components/schemas/';

/**
 * The OpenAPI 3.1 document of the routes' contracts, in a stable order (document-order.ts).
 * Routes without a contract are left out: the drift test names them.
 */
export function buildOpenApiDocument(routes: readonly DiscoveredRoute[], info: DocumentInfo): OpenApiDocument {
  const described = routes.filter((route): route is DiscoveredRoute & { contract: RouteContract } => route.contract !== undefined);
  const schemas: Record<string, z.ZodType> = { Problem: problemSchema, ValidationIssue: validationIssueSchema };
  const typeKeeping = new Set<unknown>();
  // Shown only through `x-sse-data`, which zod-openapi does not read: added after the rest.
  const eventSchemas = new Map<string, z.ZodType>();
  const operationIds = new Map<string, string>();
  const paths: ZodOpenApiPathsObject = {};
  for (const { method, path, handler, contract } of described) {
    const earlier = operationIds.get(contract.operationId);
    if (earlier !== undefined) throw new Error(`operationId ${contract.operationId} is used by ${earlier} and ${handler}`);
    operationIds.set(contract.operationId, handler);
    for (const [name, schema] of Object.entries(contract.components ?? {})) {
      if (schemas[name] !== undefined && schemas[name] !== schema)
        throw new Error(`two schemas are named ${name} (one of them by ${handler})`);
      schemas[name] = schema;
    }
    for (const schema of contract.typeKeepingTransforms ?? []) typeKeeping.add(schema);
    for (const response of Object.values(contract.responses)) {
      if (response.kind === 'event-stream') eventSchemas.set(idOf(response.schema, handler), response.schema);
    }
    const item = (paths[toOpenApiPath(path)] ??= {});
    (item as Record<string, ZodOpenApiOperationObject>)[method] = operationOf(contract);
  }
  const document = createDocument(
    {
      openapi: '3.1.0',
      info: {
        title: 'Flostra API',
        version: info.version,
        description:
          'The HTTP API of Flostra, a durable workflow execution control plane. Generated from the zod schemas the server validates with; ' +
          'errors are RFC 9457 problems (`application/problem+json`) with a stable `code`.',
      },
      servers: [{ url: '/', description: 'This server' }],
      tags: [...new Set(described.flatMap((route) => route.contract.tags))].map((name) => ({ name, description: TAG_DESCRIPTIONS[name] })),
      paths,
      components: {
        schemas,
        securitySchemes: {
          [BEARER_SCHEME]: {
            type: 'http',
            scheme: 'bearer',
            description:
              'A token from FLOSTRA_TOKENS_FILE. It carries roles per workspace (`viewer` < `operator` < `editor` < `admin`) and global ones (`worker`, `system-admin`); ' +
              '`task-worker`, outside that ladder, may only poll, heartbeat and complete the workspace’s tasks; ' +
              'an operation lists the role it needs.',
          },
        },
      },
    },
    schemaAdjustments(typeKeeping),
  );
  for (const schema of eventSchemas.values()) addOutputSchema(document, schema, schemaAdjustments(typeKeeping));
  describeParameters(document, described);
  const ordered = orderDocument(document);
  for (const [name, schema] of Object.entries(ordered.components?.schemas ?? {}) as [string, Record<string, unknown>][]) {
    if (schema['description'] === undefined && SCHEMA_DESCRIPTIONS[name] !== undefined) schema['description'] = SCHEMA_DESCRIPTIONS[name];
  }
  return ordered;
}

function idOf(schema: z.ZodType, handler: string): string {
  const id = z.globalRegistry.get(schema)?.id;
  if (id === undefined) throw new Error(`${handler}: an event stream's schema needs an id (.meta({ id }))`);
  return id;
}

function operationOf(contract: RouteContract): ZodOpenApiOperationObject {
  const operation: ZodOpenApiOperationObject = {
    operationId: contract.operationId,
    summary: contract.summary,
    description: [contract.description, accessText(contract.access)].filter(Boolean).join('\n\n'),
    tags: [...contract.tags],
    security: contract.access.kind === 'public' ? [] : [{ [BEARER_SCHEME]: [contract.access.role] }],
    responses: responsesOf(contract),
  };
  const requestParams = Object.entries({ path: contract.params, query: contract.query, header: contract.headers }).filter(
    ([, schema]) => schema !== undefined,
  );
  if (requestParams.length > 0) operation.requestParams = Object.fromEntries(requestParams);
  if (contract.body !== undefined) {
    operation.requestBody = {
      // A POST without a body reads as `{}` (json-body.ts): the body is required only when `{}` is not enough.
      required: !contract.body.safeParse({}).success,
      content: { 'application/json': { schema: contract.body } },
    };
  }
  return operation;
}

function accessText(access: RouteAccess): string {
  switch (access.kind) {
    case 'public':
      return 'Public: no token needed.';
    case 'global':
      return `Requires the global \`${access.role}\` role.`;
    case 'workspace':
      if (access.role === 'task-worker') {
        return access.of === 'path'
          ? 'Requires the `task-worker` grant in the workspace (no role there: 404; another role: 403).'
          : 'Requires the `task-worker` grant in the workspace the task belongs to (no role there: 404, as if it did not exist; another role: 403).';
      }
      return access.of === 'path'
        ? `Requires at least the \`${access.role}\` role in the workspace (none there: 404).`
        : `Requires at least the \`${access.role}\` role in the workspace the resource belongs to (none there: 404, as if it did not exist).`;
  }
}

/** Sent with every 429: when the client may try again. */
const RETRY_AFTER = {
  'Retry-After': { description: 'Seconds to wait before trying again.', schema: { type: 'integer' as const, minimum: 1 } },
};

function responsesOf(contract: RouteContract): ZodOpenApiResponsesObject {
  const responses: ZodOpenApiResponsesObject = {};
  for (const [status, response] of Object.entries(contract.responses)) {
    responses[status as `2${string}`] = successResponse(response);
  }
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of answerableCodes(contract)) {
    const status = statusOf(code);
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  for (const [status, codes] of byStatus) {
    responses[String(status) as `4${string}`] = {
      description: codes.map((code) => `\`${code}\`: ${PROBLEM_MEANINGS[code]}`).join('\n'),
      ...(status === 429 ? { headers: RETRY_AFTER } : {}),
      content: {
        [PROBLEM_CONTENT_TYPE]: {
          schema: { allOf: [{ $ref: '#/components/schemas/Problem' }, { type: 'object', properties: { code: { enum: codes } } }] },
        },
      },
    };
  }
  return responses;
}

function successResponse(response: RouteResponse) {
  switch (response.kind) {
    case 'json':
      return { description: response.description, content: { 'application/json': { schema: response.schema } } };
    case 'empty':
      return { description: response.description };
    case 'event-stream':
      return {
        description: response.description,
        content: {
          'text/event-stream': {
            schema: { type: 'string' as const, description: 'Server-Sent Events; each `data:` line is the JSON of `x-sse-data`.' },
            'x-sse-data': { $ref: `${REF_PREFIX}${z.globalRegistry.get(response.schema)?.id}` },
          },
        },
      };
  }
}

/** Parameters get the description their route gives, else the one their name has everywhere. */
function describeParameters(document: OpenApiDocument, routes: readonly (DiscoveredRoute & { contract: RouteContract })[]): void {
  for (const { method, path, contract } of routes) {
    const operation = (document.paths?.[toOpenApiPath(path)] as Record<string, oas31.OperationObject> | undefined)?.[method];
    for (const parameter of operation?.parameters ?? []) {
      if ('$ref' in parameter || parameter.description !== undefined) continue;
      const description = contract.parameterDescriptions?.[parameter.name] ?? PARAMETER_DESCRIPTIONS[parameter.name];
      if (description !== undefined) parameter.description = description;
    }
  }
}
