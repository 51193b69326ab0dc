import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Get, HttpCode, Post, Query, Res } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import type { Response } from 'express';
import { z } from 'zod';
import { Public } from '../../auth/public.decorator.js';
import { loadConfig } from '../../config/config.js';
import { InvalidStateError, NotFoundError } from '../../core/errors.js';
import { createLogger } from '../../core/logger.js';
import { configureHttp } from '../configure-http.js';
import { enableResponseChecks, type ResponseContractChecks } from './response-checks.js';
import { ApiRoute, defineRoute, empty, eventStream, json, PUBLIC } from './route-contract.js';

const thing = z.strictObject({ id: z.string(), count: z.number().int() });
const base = { summary: 'a route', tags: ['Test'], access: PUBLIC } as const;
const thingContract = defineRoute({ ...base, operationId: 'thing', responses: { 200: json('A thing.', thing) }, errors: ['not_found'] });
const createdContract = defineRoute({ ...base, operationId: 'created', responses: { 201: json('Created.', thing) }, errors: [] });
const emptyContract = defineRoute({ ...base, operationId: 'empty', responses: { 204: empty('Nothing to say.') }, errors: [] });
const streamContract = defineRoute({ ...base, operationId: 'stream', responses: { 200: eventStream('Things.', thing) }, errors: [] });

@Public()
@Controller('checked')
class CheckedController {
  @ApiRoute(thingContract)
  @Get('good')
  good() {
    return { id: 'a', count: 1 };
  }

  @ApiRoute(thingContract)
  @Get('bad-body')
  badBody() {
    return { id: 'a', count: 'one' };
  }

  @ApiRoute(createdContract)
  @Get('wrong-status')
  wrongStatus() {
    return { id: 'a', count: 1 };
  }

  @ApiRoute(thingContract)
  @Get('declared-error')
  declaredError(): never {
    throw new NotFoundError('no such thing');
  }

  @ApiRoute(thingContract)
  @Get('undeclared-error')
  undeclaredError(): never {
    throw new InvalidStateError('not now');
  }

  @ApiRoute(emptyContract)
  @Post('empty')
  @HttpCode(204)
  empty(): void {}

  @Get('no-contract')
  noContract() {
    return { id: 'a', count: 1 };
  }

  @ApiRoute(streamContract)
  @Get('stream')
  stream(@Query('bad') bad: string | undefined, @Res() res: Response): void {
    res.status(200).setHeader('Content-Type', 'text/event-stream');
    res.write('retry: 10\n: hello\n\n');
    res.write(Buffer.from(`id: 1\nevent: thing\ndata: ${JSON.stringify({ id: 'a', count: 1 })}\n\n`));
    if (bad !== undefined) res.write(`id: 2\nevent: thing\ndata: ${JSON.stringify({ id: 'b' })}\n\n`);
    res.end();
  }
}

async function startApp(
  checked: boolean,
  logLines: string[],
): Promise<{ app: NestExpressApplication; url: string; checks: ResponseContractChecks | null }> {
  const moduleRef = await Test.createTestingModule({ controllers: [CheckedController] }).compile();
  const app = moduleRef.createNestApplication<NestExpressApplication>({ bodyParser: false, logger: false });
  const logger = createLogger({ level: 'debug', write: (line) => logLines.push(line) });
  configureHttp(app, loadConfig({}), logger);
  const checks = checked ? enableResponseChecks(app, logger) : null;
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as { port: number };
  return { app, url: `http://127.0.0.1:${port}`, checks };
}

describe('response checks against route contracts', () => {
  const logLines: string[] = [];
  let checked: Awaited<ReturnType<typeof startApp>>;
  let unchecked: Awaited<ReturnType<typeof startApp>>;

  beforeAll(async () => {
    checked = await startApp(true, logLines);
    unchecked = await startApp(false, []);
  });
  afterAll(async () => {
    await checked?.app.close();
    await unchecked?.app.close();
  });

  const get = (path: string, app = checked) => fetch(`${app.url}${path}`);

  it('lets a response that matches its contract through', async () => {
    const response = await get('/checked/good');
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ id: 'a', count: 1 });
  });

  it('answers 500 naming the route and the issue when the body does not match', async () => {
    const response = await get('/checked/bad-body');
    expect(response.status).toBe(500);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const problem = (await response.json()) as Record<string, unknown>;
    expect(problem).toMatchObject({
      code: 'internal',
      status: 500,
      route: 'GET /checked/bad-body',
      issues: [{ path: 'body.count', message: expect.any(String) }],
    });
    expect(problem['detail']).toContain('GET /checked/bad-body');
    expect(problem['detail']).toContain('body.count');
  });

  it('fails a status the contract does not declare', async () => {
    const response = await get('/checked/wrong-status');
    expect(response.status).toBe(500);
    expect(((await response.json()) as { detail: string }).detail).toContain('status 200 is not declared (201 are)');
  });

  it('passes a problem whose code the route declares', async () => {
    const response = await get('/checked/declared-error');
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ code: 'not_found' });
  });

  it('fails a problem whose code the route does not declare', async () => {
    const response = await get('/checked/undeclared-error');
    expect(response.status).toBe(500);
    expect(((await response.json()) as { detail: string }).detail).toContain(
      'answered 409 invalid_state ("not now"), a code its contract does not list',
    );
  });

  it('accepts an empty response declared without a body', async () => {
    const response = await fetch(`${checked.url}/checked/empty`, { method: 'POST' });
    expect(response.status).toBe(204);
  });

  it('fails a route that has no contract', async () => {
    const response = await get('/checked/no-contract');
    expect(response.status).toBe(500);
    expect(((await response.json()) as { detail: string }).detail).toContain('the route has no contract');
  });

  it('checks each event of a stream, and cuts the stream at the first bad one', async () => {
    const good = await (await get('/checked/stream')).text();
    expect(good).toContain('data: {"id":"a","count":1}');
    // Cut off: the client gets at most the frames before the bad one, or (written in one go here) nothing.
    const bad = await get('/checked/stream?bad=1')
      .then((response) => response.text())
      .catch((error: unknown) => String(error));
    expect(bad).not.toContain('"id":"b"');
    expect(checked.checks!.violations.at(-1)).toMatchObject({
      route: 'GET /checked/stream',
      detail: 'an event’s data does not match its schema',
    });
  });

  it('records and logs every violation', () => {
    const routes = checked.checks!.violations.map((violation) => violation.route);
    expect(routes).toEqual([
      'GET /checked/bad-body',
      'GET /checked/wrong-status',
      'GET /checked/undeclared-error',
      'GET /checked/no-contract',
      'GET /checked/stream',
    ]);
    const logged = logLines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((record) => record['msg'] === 'response contract violated');
    expect(logged.map((record) => [record['level'], record['route']])).toEqual(routes.map((route) => ['error', route]));
  });

  it('checks nothing unless enabled: production answers what the handler returned', async () => {
    const response = await get('/checked/bad-body', unchecked);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ id: 'a', count: 'one' });
  });
});
