import { z } from 'zod';
import { defineRoute, json, PUBLIC } from '../http/openapi/route-contract.js';

/** Contracts of HealthController (docs/api.md, "Admin and health"): public probes. */

const TAGS = ['Health'];

export const liveContract = defineRoute({
  operationId: 'healthLive',
  summary: 'Liveness probe',
  description: 'Answers while the process serves HTTP; checks nothing else.',
  tags: TAGS,
  access: PUBLIC,
  responses: { 200: json('The process is up.', z.strictObject({ status: z.literal('ok') })) },
  errors: [],
});

export const readyContract = defineRoute({
  operationId: 'healthReady',
  summary: 'Readiness probe',
  description: 'Ready only when every dependency answers; else 503 `unavailable`.',
  tags: TAGS,
  access: PUBLIC,
  responses: {
    200: json(
      'Every dependency answers.',
      z.strictObject({ status: z.literal('ok'), checks: z.strictObject({ eventStore: z.literal('ok') }) }),
    ),
  },
  errors: ['unavailable'],
});
