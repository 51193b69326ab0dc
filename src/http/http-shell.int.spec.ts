import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Body, Controller, Get, Param, Post } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import { gzipSync } from 'node:zlib';
import { z } from 'zod';
import { sleep } from '../../test/support/eventually.js';
import { AuthModule } from '../auth/auth.module.js';
import { requireWorkspaceRole, type Principal } from '../auth/authorization.js';
import { CurrentPrincipal } from '../auth/current-principal.decorator.js';
import { Public } from '../auth/public.decorator.js';
import { TokenRegistry } from '../auth/token-registry.js';
import { loadConfig } from '../config/config.js';
import { DomainError, type ErrorCode } from '../core/errors.js';
import { createLogger } from '../core/logger.js';
import { configureHttp } from './configure-http.js';
import { parseBody, parseId } from './validation.js';

const TOKEN = 'http-shell-spec-token-0123456789';
const SECRET = 'password=hunter2 at db.internal:5432';

@Controller('test')
class TestController {
  @Post('echo')
  echo(@CurrentPrincipal() principal: Principal, @Body() body: unknown) {
    return { subject: principal.subject, body };
  }

  @Post('people')
  person(@Body() body: unknown) {
    return parseBody(z.strictObject({ name: z.string(), age: z.number().int() }), body);
  }

  @Get('executions/:executionId')
  execution(@CurrentPrincipal() principal: Principal, @Param('executionId') executionId: string) {
    const id = parseId(executionId, 'executionId');
    requireWorkspaceRole(principal, id.startsWith('0') ? 'acme' : 'globex', 'viewer', 'execution not found');
    return { executionId: id };
  }

  @Post('errors/:code')
  fail(@Param('code') code: string): never {
    throw new DomainError(code as ErrorCode, `a ${code} happened`, { hint: 'extension member' });
  }

  @Get('boom')
  boom(): never {
    throw new Error(SECRET);
  }
}

@Public()
@Controller('health')
class HealthController {
  @Get('live')
  live() {
    return { status: 'ok' };
  }
}

describe('the HTTP shell', () => {
  let app: NestExpressApplication;
  let base: string;
  const logLines: string[] = [];
  const logs = () => logLines.map((line) => JSON.parse(line) as Record<string, unknown>);

  beforeAll(async () => {
    const registry = new TokenRegistry([{ token: TOKEN, subject: 'olga', workspaces: { acme: 'operator' }, global: [] }]);
    const moduleRef = await Test.createTestingModule({
      imports: [AuthModule.forRoot(registry)],
      controllers: [TestController, HealthController],
    }).compile();
    app = moduleRef.createNestApplication<NestExpressApplication>({ bodyParser: false, logger: false });
    const config = loadConfig({ FLOSTRA_MAX_BODY_BYTES: '1024' });
    configureHttp(app, config, createLogger({ level: 'debug', write: (line) => logLines.push(line) }));
    await app.listen(0, '127.0.0.1');
    const address = app.getHttpServer().address() as { port: number };
    base = `http://127.0.0.1:${address.port}`;
  });

  afterAll(async () => {
    await app.close();
  });

  const auth = { authorization: `Bearer ${TOKEN}` };
  const json = { ...auth, 'content-type': 'application/json' };

  async function problemOf(response: Response) {
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    return (await response.json()) as Record<string, unknown>;
  }

  describe('authentication', () => {
    it('answers 401 without a token', async () => {
      const response = await fetch(`${base}/test/echo`, { method: 'POST' });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer');
      expect(await problemOf(response)).toMatchObject({
        type: 'urn:flostra:problem:unauthenticated',
        title: 'Unauthenticated',
        status: 401,
        code: 'unauthenticated',
      });
    });

    it('answers 401 for an unknown token', async () => {
      const response = await fetch(`${base}/test/echo`, { method: 'POST', headers: { authorization: 'Bearer not-a-known-token' } });
      expect(response.status).toBe(401);
      expect(await problemOf(response)).toMatchObject({ code: 'unauthenticated', detail: 'unknown or revoked bearer token' });
    });

    it('lets public routes through without a token', async () => {
      const response = await fetch(`${base}/health/live`);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ status: 'ok' });
    });

    it('answers 401, not 400, for a malformed body without a valid token: the body is never read', async () => {
      for (const headers of [{}, { authorization: 'Bearer not-a-known-token' }] as Record<string, string>[]) {
        const response = await fetch(`${base}/test/echo`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: '{"a":',
        });
        expect(response.status).toBe(401);
        expect(response.headers.get('connection')).toBe('close');
        expect((await problemOf(response)).code).toBe('unauthenticated');
      }
    });

    it('hands the principal to the handler', async () => {
      const response = await fetch(`${base}/test/echo`, { method: 'POST', headers: json, body: '{"a":1}' });
      expect(response.status).toBe(201);
      expect(await response.json()).toEqual({ subject: 'olga', body: { a: 1 } });
    });
  });

  describe('request bodies', () => {
    it('reads an empty POST body as {}', async () => {
      const response = await fetch(`${base}/test/echo`, { method: 'POST', headers: auth });
      expect(await response.json()).toEqual({ subject: 'olga', body: {} });
    });

    it('accepts +json media types', async () => {
      const response = await fetch(`${base}/test/echo`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/merge-patch+json; charset=utf-8' },
        body: '{"b":2}',
      });
      expect(await response.json()).toEqual({ subject: 'olga', body: { b: 2 } });
    });

    it('answers malformed JSON with 400 validation_failed', async () => {
      const response = await fetch(`${base}/test/echo`, { method: 'POST', headers: json, body: '{"a":' });
      expect(response.status).toBe(400);
      const problem = await problemOf(response);
      expect(problem).toMatchObject({ code: 'validation_failed', status: 400 });
      expect(problem.detail).toMatch(/^malformed JSON body: /);
    });

    it('never quotes the malformed body back: it may hold a secret value', async () => {
      for (const body of ['{"value": hunter2secret}', '{"value": "hunter2secret', '{"value": "hunter2secret" "x"}']) {
        const response = await fetch(`${base}/test/echo`, { method: 'POST', headers: json, body });
        expect(response.status).toBe(400);
        const text = await response.text();
        expect(text).toMatch(/malformed JSON body: \w/);
        expect(text).not.toContain('hunter');
      }
    });

    it('answers a non-JSON body with 415', async () => {
      const response = await fetch(`${base}/test/echo`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'text/plain' },
        body: 'hello',
      });
      expect(response.status).toBe(415);
      expect(await problemOf(response)).toMatchObject({ code: 'unsupported_media_type', status: 415 });
    });

    it('answers a body over the limit with 413', async () => {
      const body = JSON.stringify({ pad: 'x'.repeat(2000) });
      const response = await fetch(`${base}/test/echo`, { method: 'POST', headers: json, body });
      expect(response.status).toBe(413);
      expect(await problemOf(response)).toMatchObject({ code: 'payload_too_large', status: 413, limitBytes: 1024 });
    });

    it('answers a streamed body that grows over the limit with 413', async () => {
      const chunk = new TextEncoder().encode(`"${'y'.repeat(600)}",`);
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('['));
          controller.enqueue(chunk);
          controller.enqueue(chunk);
          controller.enqueue(new TextEncoder().encode('1]'));
          controller.close();
        },
      });
      const response = await fetch(`${base}/test/echo`, { method: 'POST', headers: json, body: stream, duplex: 'half' });
      expect(response.status).toBe(413);
      expect((await problemOf(response)).code).toBe('payload_too_large');
    });

    it('reads a gzip-encoded body, and refuses an unknown Content-Encoding with 415', async () => {
      const body = gzipSync('{"zipped":true}');
      const zipped = await fetch(`${base}/test/echo`, { method: 'POST', headers: { ...json, 'content-encoding': 'gzip' }, body });
      expect(await zipped.json()).toEqual({ subject: 'olga', body: { zipped: true } });
      const unknown = await fetch(`${base}/test/echo`, { method: 'POST', headers: { ...json, 'content-encoding': 'zip' }, body });
      expect(unknown.status).toBe(415);
      expect((await problemOf(unknown)).detail).toBe('unsupported Content-Encoding zip');
    });

    it('refuses a charset other than UTF-8 with 415', async () => {
      const response = await fetch(`${base}/test/echo`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json; charset=latin1' },
        body: '{"a":1}',
      });
      expect(response.status).toBe(415);
      expect((await problemOf(response)).code).toBe('unsupported_media_type');
    });

    it('answers a schema mismatch with 400 and every issue', async () => {
      const response = await fetch(`${base}/test/people`, { method: 'POST', headers: json, body: '{"age":1.5,"extra":true}' });
      expect(response.status).toBe(400);
      const problem = await problemOf(response);
      expect(problem.code).toBe('validation_failed');
      expect((problem.issues as { path: string }[]).map((issue) => issue.path).sort()).toEqual(['body', 'body.age', 'body.name']);
    });
  });

  describe('errors', () => {
    it('answers an unknown route with a 404 problem', async () => {
      const response = await fetch(`${base}/nowhere`);
      expect(response.status).toBe(404);
      expect(await problemOf(response)).toMatchObject({ code: 'not_found', status: 404, type: 'urn:flostra:problem:not_found' });
    });

    it.each([
      ['validation_failed', 400],
      ['unauthenticated', 401],
      ['forbidden', 403],
      ['not_found', 404],
      ['idempotency_conflict', 409],
      ['invalid_state', 409],
      ['stale_attempt', 409],
      ['lease_expired', 409],
      ['approval_mismatch', 409],
      ['secret_not_found', 409],
      ['concurrency_conflict', 409],
      ['payload_too_large', 413],
      ['unsupported_media_type', 415],
      ['unavailable', 503],
    ])('maps a DomainError %s to %i', async (code, status) => {
      const response = await fetch(`${base}/test/errors/${code}`, { method: 'POST', headers: auth });
      expect(response.status).toBe(status);
      expect(await problemOf(response)).toEqual({
        type: `urn:flostra:problem:${code}`,
        title: expect.any(String),
        status,
        detail: `a ${code} happened`,
        code,
        hint: 'extension member',
      });
    });

    it('answers an unexpected error with 500 and keeps its message to the log', async () => {
      const response = await fetch(`${base}/test/boom`, { headers: { ...auth, 'x-request-id': 'req-boom-1' } });
      expect(response.status).toBe(500);
      const text = await response.clone().text();
      expect(text).not.toContain('hunter2');
      expect(await problemOf(response)).toMatchObject({ code: 'internal', status: 500 });
      const logged = logs().find((record) => record.msg === 'unhandled error');
      expect(logged).toMatchObject({ level: 'error', requestId: 'req-boom-1', path: '/test/boom', err: { message: SECRET } });
    });

    it('rejects a malformed uuid before the handler uses it', async () => {
      const response = await fetch(`${base}/test/executions/not-a-uuid`, { headers: auth });
      expect(response.status).toBe(400);
      expect((await problemOf(response)).issues).toEqual([{ path: 'params.executionId', message: 'expected a UUID' }]);
    });

    it("hides another workspace's resource as 404 and shows one of its own", async () => {
      const other = await fetch(`${base}/test/executions/9e1f1d2a-5b3c-4d4e-8f50-6a7b8c9d0e1f`, { headers: auth });
      expect(other.status).toBe(404);
      expect((await problemOf(other)).detail).toBe('execution not found');
      const own = await fetch(`${base}/test/executions/0E1F1D2A-5B3C-4D4E-8F50-6A7B8C9D0E1F`, { headers: auth });
      expect(await own.json()).toEqual({ executionId: '0e1f1d2a-5b3c-4d4e-8f50-6a7b8c9d0e1f' });
    });
  });

  describe('housekeeping', () => {
    it('sends no x-powered-by and echoes a request id', async () => {
      const response = await fetch(`${base}/health/live`);
      expect(response.headers.get('x-powered-by')).toBeNull();
      expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    });

    it('logs each request as one JSON record', async () => {
      await fetch(`${base}/test/echo`, { method: 'POST', headers: { ...auth, 'x-request-id': 'req-log-1' } });
      await sleep(20);
      expect(logs().find((record) => record.requestId === 'req-log-1' && record.msg === 'request')).toMatchObject({
        level: 'info',
        method: 'POST',
        path: '/test/echo',
        status: 201,
        subject: 'olga',
        component: 'http',
      });
    });
  });
});
