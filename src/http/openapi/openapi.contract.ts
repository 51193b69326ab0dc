import { z } from 'zod';
import { defineRoute, json, PUBLIC } from './route-contract.js';

export const openApiDocumentContract = defineRoute({
  operationId: 'getOpenApiDocument',
  summary: 'This API as an OpenAPI 3.1 document',
  description: 'Generated from the same zod schemas the server validates requests with. Also committed as docs/openapi.json.',
  tags: ['Documentation'],
  access: PUBLIC,
  responses: { 200: json('The document.', z.record(z.string(), z.unknown()).meta({ description: 'An OpenAPI 3.1 document.' })) },
  errors: [],
});
