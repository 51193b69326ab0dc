import type { z } from 'zod';
import type { ValidationIssue } from '../../core/errors.js';

/** `['nodes', 3, 'config', 'ms']` → `nodes[3].config.ms`; keys that are not identifiers are quoted. */
export function formatPath(path: readonly PropertyKey[]): string {
  let text = '';
  for (const segment of path) {
    if (typeof segment === 'number') text += `[${segment}]`;
    else if (typeof segment === 'string' && /^[A-Za-z_$][\w$]*$/.test(segment)) text += text === '' ? segment : `.${segment}`;
    else text += `[${JSON.stringify(String(segment))}]`;
  }
  return text;
}

/** One issue per problem, each naming the exact field: unknown fields are reported one by one. */
export function issuesFromZod(error: z.ZodError): ValidationIssue[] {
  return error.issues.flatMap((issue) =>
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => ({ path: formatPath([...issue.path, key]), message: 'unknown field' }))
      : [{ path: formatPath(issue.path), message: issue.message }],
  );
}
