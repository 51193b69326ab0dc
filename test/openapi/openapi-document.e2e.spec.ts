import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { oas31 } from 'zod-openapi';
import { renderApiReference } from '../../src/http/openapi/api-reference.renderer.js';
import { stringifyDocument } from '../../src/http/openapi/document-order.js';
import { OpenApiDocuments } from '../../src/http/openapi/openapi-documents.js';
import { isRouteContract } from '../../src/http/openapi/route-contract.js';
import { structuralProblems } from '../support/openapi-structure.js';
import { client } from '../support/http-client.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

const ROOT = process.cwd();
const REGENERATE = 'run `npm run docs:openapi` and commit docs/openapi.json and docs/api-reference.md';

/** `GET /v1/x/:id` for every route Express serves: what the running app really registered. */
function registeredRoutes(t: TestApp): string[] {
  const express = t.app.getHttpAdapter().getInstance() as {
    router: { stack: { route?: { path: string; methods: Record<string, boolean> } }[] };
  };
  return express.router.stack
    .flatMap((layer) =>
      layer.route === undefined ? [] : Object.keys(layer.route.methods).map((method) => `${method.toUpperCase()} ${layer.route!.path}`),
    )
    .sort();
}

/** Every contract declared in a `*.contract.ts` under src/, with the file it is in. */
async function declaredContracts(): Promise<{ operationId: string; file: string }[]> {
  const files = readdirSync(join(ROOT, 'src'), { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.contract.ts'));
  const found: { operationId: string; file: string }[] = [];
  for (const file of files) {
    const module = (await import(pathToFileURL(join(ROOT, 'src', file)).href)) as Record<string, unknown>;
    for (const value of Object.values(module))
      if (isRouteContract(value)) found.push({ operationId: value.operationId, file: relative(ROOT, join(ROOT, 'src', file)) });
  }
  return found;
}

function firstDifference(actual: string, expected: string): string {
  const a = actual.split('\n');
  const e = expected.split('\n');
  const line = a.findIndex((text, index) => text !== e[index]);
  const at = line === -1 ? Math.min(a.length, e.length) : line;
  return `first difference at line ${at + 1}:\n  generated: ${a[at] ?? '(end)'}\n  committed: ${e[at] ?? '(end)'}`;
}

function committed(file: string): string {
  try {
    return readFileSync(join(ROOT, 'docs', file), 'utf8');
  } catch {
    return '';
  }
}

describe('the OpenAPI document', () => {
  let t: TestApp;
  let document: oas31.OpenAPIObject;

  beforeAll(async () => {
    t = await startTestApp('pglite');
    const res = await client(t.url).get('/openapi.json');
    expect(res.status).toBe(200);
    document = res.body as oas31.OpenAPIObject;
  });
  afterAll(() => t?.close());

  describe('covers the application', () => {
    it('has a contract for every route the app registers', () => {
      const described = new Set(
        t.app
          .get(OpenApiDocuments)
          .routes()
          .filter((route) => route.contract !== undefined)
          .map((route) => `${route.method.toUpperCase()} ${route.path}`),
      );
      const missing = registeredRoutes(t).filter((route) => !described.has(route));
      expect(missing).toEqual([]);
    });

    it('names the handler of a route without a contract', () => {
      const undescribed = t.app
        .get(OpenApiDocuments)
        .routes()
        .filter((route) => route.contract === undefined)
        .map((route) => `${route.method.toUpperCase()} ${route.path} (${route.handler}): add @ApiRoute(contract)`);
      expect(undescribed).toEqual([]);
    });

    it('registers a route for every contract declared in src/**/*.contract.ts', async () => {
      const attached = new Set(
        t.app
          .get(OpenApiDocuments)
          .routes()
          .flatMap((route) => (route.contract === undefined ? [] : [route.contract.operationId])),
      );
      const registered = new Set(registeredRoutes(t));
      const routes = t.app.get(OpenApiDocuments).routes();
      const contracts = await declaredContracts();
      expect(contracts.length).toBeGreaterThan(15);
      const orphans = contracts
        .filter(({ operationId }) => {
          const route = routes.find((candidate) => candidate.contract?.operationId === operationId);
          return !attached.has(operationId) || route === undefined || !registered.has(`${route.method.toUpperCase()} ${route.path}`);
        })
        .map(({ operationId, file }) => `${operationId} (${file}) is on no registered route`);
      expect(orphans).toEqual([]);
    });

    it('is served without a token, as the document the code builds now', () => {
      expect(document).toEqual(JSON.parse(stringifyDocument(t.app.get(OpenApiDocuments).current())));
    });
  });

  describe('is committed as generated', () => {
    it('docs/openapi.json', () => {
      const generated = stringifyDocument(document);
      const file = committed('openapi.json');
      if (generated !== file)
        throw new Error(`docs/openapi.json is not what the code generates: ${REGENERATE}\n${firstDifference(generated, file)}`);
    });

    it('docs/api-reference.md', () => {
      const generated = renderApiReference(document);
      const file = committed('api-reference.md');
      if (generated !== file)
        throw new Error(`docs/api-reference.md is not what the code generates: ${REGENERATE}\n${firstDifference(generated, file)}`);
    });
  });

  it('is a structurally valid OpenAPI 3.1 document', () => {
    expect(structuralProblems(document)).toEqual([]);
  });
});
