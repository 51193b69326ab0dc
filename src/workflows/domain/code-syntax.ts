import { DomainError, type ValidationIssue } from '../../core/errors.js';
import type { WorkflowGraph } from './workflow-graph.schema.js';

/**
 * Compiles the source of a `code` node without running it: the syntax error's message, or null.
 * The port behind which the publish path reaches the JavaScript interpreter; rejects with
 * `CodeCheckTimeoutError` once the publish's time for its checks has run out.
 */
export type CodeSyntaxCheck = (source: string) => Promise<string | null>;

/** The sources of one publish were not all checked within FLOSTRA_CODE_CHECK_TIMEOUT_MS (503): nothing was published. */
export class CodeCheckTimeoutError extends DomainError {
  constructor(timeoutMs: number, options?: { cause?: unknown }) {
    super(
      'unavailable',
      `the sources of the code nodes were not all checked within ${timeoutMs} ms (FLOSTRA_CODE_CHECK_TIMEOUT_MS); nothing was published; try again`,
      { timeoutMs, retryAfterSeconds: 1 },
    );
    if (options?.cause !== undefined) this.cause = options.cause;
  }
}

/** One issue per `code` node whose source does not compile, at its `config.source`. */
export async function codeSyntaxIssues(graph: WorkflowGraph, check: CodeSyntaxCheck): Promise<ValidationIssue[]> {
  const issues: ValidationIssue[] = [];
  for (const [index, node] of graph.nodes.entries()) {
    if (node.type !== 'code') continue;
    const error = await check(node.config.source);
    if (error !== null) issues.push({ path: `nodes[${index}].config.source`, message: `does not compile: ${error}` });
  }
  return issues;
}
