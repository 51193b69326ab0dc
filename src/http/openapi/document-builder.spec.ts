import { describe, expect, it } from '@jest/globals';
import { Controller, Get, Post, type Type } from '@nestjs/common';
import { z } from 'zod';
import { ValidationFailedError } from '../../core/errors.js';
import { problem, toProblem } from '../problem.js';
import { nameSchema, uuidSchema } from '../validation.js';
import { renderApiReference } from './api-reference.renderer.js';
import { buildOpenApiDocument } from './document-builder.js';
import { stringifyDocument } from './document-order.js';
import { problemSchema } from './problem.schema.js';
import { answerableCodes, ApiRoute, defineRoute, ERROR_ORDER, globalRole, json, PUBLIC, workspaceRole } from './route-contract.js';
import { discoverRoutes, joinRoutePath } from './route-discovery.js';

const widget = z.strictObject({ widgetId: z.uuid(), name: nameSchema }).meta({ id: 'Widget' });
const createBody = z.strictObject({ name: nameSchema, note: z.string().optional() });
const optionalBody = z.strictObject({ reason: z.string().optional() });

const getWidget = defineRoute({
  operationId: 'getWidget',
  summary: 'Get a widget',
  tags: ['Widgets'],
  access: workspaceRole('viewer', 'resource'),
  params: z.object({ widgetId: uuidSchema }),
  responses: { 200: json('The widget.', widget) },
  errors: ['validation_failed', 'not_found'],
});
const createWidget = defineRoute({
  operationId: 'createWidget',
  summary: 'Create a widget',
  tags: ['Widgets'],
  access: globalRole('system-admin'),
  body: createBody,
  responses: { 201: json('Created.', widget) },
  errors: ['forbidden', 'concurrency_conflict', 'invalid_state'],
});
const poke = defineRoute({
  operationId: 'poke',
  summary: 'Poke',
  tags: ['Widgets'],
  access: PUBLIC,
  body: optionalBody,
  responses: { 200: json('Poked.', widget) },
  errors: [],
});

@Controller('v1/widgets')
class WidgetsController {
  @ApiRoute(getWidget)
  @Get(':widgetId')
  get() {}

  @ApiRoute(createWidget)
  @Post()
  create() {}

  @ApiRoute(poke)
  @Post('poke')
  poke() {}

  @Get('secret')
  undocumented() {}
}

@Controller()
class DuplicateController {
  @ApiRoute(getWidget)
  @Get('again/:widgetId')
  again() {}
}

const build = (controllers: Type[] = [WidgetsController]) => buildOpenApiDocument(discoverRoutes(controllers), { version: '9.9.9' });

describe('the OpenAPI document builder', () => {
  it('joins controller and method paths the way Nest does', () => {
    expect(joinRoutePath('v1', ':id')).toBe('/v1/:id');
    expect(joinRoutePath('/v1/', '')).toBe('/v1');
    expect(joinRoutePath('', '')).toBe('/');
    expect(discoverRoutes([WidgetsController]).map((route) => `${route.method} ${route.path} ${route.handler}`)).toEqual([
      'get /v1/widgets/:widgetId WidgetsController.get',
      'post /v1/widgets WidgetsController.create',
      'post /v1/widgets/poke WidgetsController.poke',
      'get /v1/widgets/secret WidgetsController.undocumented',
    ]);
  });

  it('documents each route with a contract, and leaves out one without', () => {
    const document = build();
    expect(Object.keys(document.paths!)).toEqual(['/v1/widgets', '/v1/widgets/poke', '/v1/widgets/{widgetId}']);
    expect(document.info.version).toBe('9.9.9');
    expect(document.servers).toEqual([{ url: '/', description: 'This server' }]);
  });

  it('shows a case-insensitive UUID parameter as format uuid, not as a lower-case pattern', () => {
    const operation = build().paths!['/v1/widgets/{widgetId}'].get!;
    expect(operation.parameters).toEqual([
      expect.objectContaining({ in: 'path', name: 'widgetId', required: true, schema: { type: 'string', format: 'uuid' } }),
    ]);
  });

  it('names the role a route needs, and needs no token on a public one', () => {
    const paths = build().paths!;
    expect(paths['/v1/widgets/{widgetId}'].get!.security).toEqual([{ bearerAuth: ['viewer'] }]);
    expect(paths['/v1/widgets'].post!.security).toEqual([{ bearerAuth: ['system-admin'] }]);
    expect(paths['/v1/widgets/poke'].post!.security).toEqual([]);
  });

  it('requires a body only when an empty one would not do', () => {
    const paths = build().paths!;
    expect(paths['/v1/widgets'].post!.requestBody).toMatchObject({ required: true });
    expect(paths['/v1/widgets/poke'].post!.requestBody).toMatchObject({ required: false });
  });

  it('answers too_many_requests only where a token’s share of request handling applies', () => {
    expect(answerableCodes(getWidget)).toContain('too_many_requests');
    expect(answerableCodes(poke)).not.toContain('too_many_requests');
    expect(answerableCodes({ ...getWidget, longPoll: true })).not.toContain('too_many_requests');
    expect(answerableCodes({ ...getWidget, access: globalRole('worker') })).not.toContain('too_many_requests');
    const stream = { kind: 'event-stream', description: 'Events.', schema: widget } as const;
    expect(answerableCodes({ ...getWidget, responses: { 200: stream } })).not.toContain('too_many_requests');
  });

  it('groups the problem codes a route answers by status, each a Problem', () => {
    expect(answerableCodes(createWidget)).toEqual([
      'validation_failed',
      'unauthenticated',
      'forbidden',
      'csrf_required',
      'request_timeout',
      'invalid_state',
      'concurrency_conflict',
      'payload_too_large',
      'unsupported_media_type',
      'too_many_requests',
    ]);
    const responses = build().paths!['/v1/widgets'].post!.responses!;
    expect(Object.keys(responses)).toEqual(['201', '400', '401', '403', '408', '409', '413', '415', '429']);
    expect(responses['409']).toMatchObject({
      content: {
        'application/problem+json': {
          schema: {
            allOf: [
              { $ref: '#/components/schemas/Problem' },
              { properties: { code: { enum: ['invalid_state', 'concurrency_conflict'] } } },
            ],
          },
        },
      },
    });
    expect(Object.keys(build().paths!['/v1/widgets/poke'].post!.responses!)).toEqual(['200', '400', '408', '413', '415']);
  });

  it('refuses two routes with one operationId', () => {
    expect(() => build([WidgetsController, DuplicateController])).toThrow(
      'operationId getWidget is used by WidgetsController.get and DuplicateController.again',
    );
  });

  it('writes the same bytes whatever order the controllers come in', () => {
    const other = defineRoute({ ...poke, operationId: 'other' });
    @Controller('a')
    class AController {
      @ApiRoute(other)
      @Post()
      other() {}
    }
    expect(stringifyDocument(build([WidgetsController, AController]))).toBe(stringifyDocument(build([AController, WidgetsController])));
    const reference = renderApiReference(build([WidgetsController, AController]));
    expect(reference).toContain('`POST /v1/widgets` — `createWidget`');
    expect(reference).toContain(
      '| 409 | `application/problem+json` | [Problem](#schema-problem) (code `invalid_state`, `concurrency_conflict`) |',
    );
  });
});

describe('the Problem schema', () => {
  it('describes every problem the API answers', () => {
    for (const code of [...ERROR_ORDER, 'internal'] as const) {
      expect(problemSchema.safeParse(problem(code, 'something happened', { requiredRole: 'admin' })).success).toBe(true);
    }
    const invalid = toProblem(new ValidationFailedError('invalid body', [{ path: 'body.name', message: 'required' }])).problem;
    expect(problemSchema.parse(invalid)).toMatchObject({ code: 'validation_failed', issues: [{ path: 'body.name', message: 'required' }] });
  });
});
