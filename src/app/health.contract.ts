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

const check = z.enum(['up', 'down']);

/** Every dependency the process's roles use, by name: `eventStore`, `readModels`, and `kafka` when a role here uses it. */
const checks = z
  .strictObject({ eventStore: check, readModels: check, kafka: check.optional() })
  .meta({ description: 'Each dependency of this process’s roles: `kafka` only when the bus is Kafka and a role here uses it.' });

const readiness = z.strictObject({ status: z.enum(['ok', 'unavailable']), checks }).meta({ id: 'Readiness' });

export const readyContract = defineRoute({
  operationId: 'healthReady',
  summary: 'Readiness probe',
  description:
    'Probes every dependency of the roles this process runs (each within 3 s). 200 when all answer; 503 with the same ' +
    'body when any does not, naming which.',
  tags: TAGS,
  access: PUBLIC,
  responses: {
    200: json('Every dependency answers.', readiness),
    503: json('At least one dependency does not answer; `checks` says which.', readiness),
  },
  errors: [],
});
