import { z } from 'zod';
import { ERROR_ORDER } from './route-contract.js';

/** One problem with the input: where (`body.nodes[2].id`, `query.limit`, `params.executionId`) and what. */
export const validationIssueSchema = z.strictObject({
  path: z.string().meta({ description: 'Where the value came from, then the field: `body.…`, `query.…`, `params.…`, or a header name.' }),
  message: z.string(),
});

/**
 * RFC 9457 problem details as problem.ts builds them: one shape for every error. Extension
 * members beyond the listed ones carry a code's details (e.g. `requiredRole` on `forbidden`,
 * `attemptId` on `stale_attempt`, `limitBytes` on `payload_too_large`).
 */
export const problemSchema = z
  .looseObject({
    type: z.string().meta({ description: '`urn:flostra:problem:<code>`.', examples: ['urn:flostra:problem:not_found'] }),
    title: z.string().meta({ description: 'A short summary of the code; the same for every problem of that code.' }),
    status: z.number().int().min(400).max(599).meta({ description: 'The HTTP status, repeated.' }),
    detail: z.string().meta({ description: 'What went wrong with this request, for people.' }),
    code: z
      .enum([...ERROR_ORDER, 'internal'])
      .meta({ description: 'Stable and machine-readable: clients branch on this, never on `title` or `detail`.' }),
    issues: z
      .array(validationIssueSchema)
      .optional()
      .meta({ description: 'With `validation_failed`: every problem found in the input, each naming its field.' }),
  })
  .meta({
    description: 'An RFC 9457 problem (`application/problem+json`). Other members carry details of some codes.',
  });

export type ProblemBody = z.infer<typeof problemSchema>;
