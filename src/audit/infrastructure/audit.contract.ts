import { z } from 'zod';
import { identifierField, positionField, timestampField, uuidField } from '../../http/openapi/response-fields.js';
import { defineRoute, json, workspaceRole } from '../../http/openapi/route-contract.js';
import { nameSchema } from '../../http/validation.js';
import { auditQuerySchema } from '../application/request-schemas.js';

/** Contract of AuditController (docs/api.md, "Audit trail"). */

const auditEntrySchema = z
  .strictObject({
    position: positionField,
    at: timestampField.meta({ description: 'When the event store recorded the event.' }),
    actor: z.string().min(1).meta({
      description:
        'Who did it: a token’s subject, `worker:<workerId>`, `system:<role>`, or `unknown` for an event recorded before actors were.',
    }),
    action: z.string().min(1).meta({ description: 'The event’s type, e.g. `ExecutionStarted` or `ApprovalGranted`.' }),
    executionId: uuidField.optional(),
    workflow: identifierField.optional().meta({ description: 'The workflow’s name.' }),
    detail: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).meta({
      description: 'A small summary: ids, numbers, codes and digests the action’s entry names, never inputs, outputs or free text.',
    }),
  })
  .meta({ id: 'AuditEntry' });

export const auditPageSchema = z
  .strictObject({
    items: z.array(auditEntrySchema),
    next: positionField.nullable().meta({ description: 'Pass as `before` for the next page; null on the last page.' }),
  })
  .meta({ id: 'AuditPage' });

export const auditTrailContract = defineRoute({
  operationId: 'getAuditTrail',
  summary: 'Read a workspace’s audit trail',
  description:
    'Who did what in the workspace, newest first, in pages: every command’s events, with the actor that commanded them. ' +
    'Reads are read-your-writes: the query first waits (bounded) until the read model reflects every write acknowledged before it arrived; ' +
    '`minPosition` (or X-Flostra-Min-Position) waits only for that position, `consistency=eventual` does not wait.',
  tags: ['Audit'],
  access: workspaceRole('admin', 'path'),
  params: z.object({ workspaceId: nameSchema }),
  query: auditQuerySchema,
  headers: z.object({ 'X-Flostra-Min-Position': z.string().optional() }),
  responses: { 200: json('One page of the audit trail, newest first.', auditPageSchema) },
  errors: ['validation_failed', 'forbidden', 'not_found', 'unavailable'],
  parameterDescriptions: {
    before: 'Only entries before this one: the previous page’s `next`.',
    limit: 'Page size, 1-200 (default 50).',
  },
});
