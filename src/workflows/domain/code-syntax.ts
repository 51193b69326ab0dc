import type { ValidationIssue } from '../../core/errors.js';
import type { WorkflowGraph } from './workflow-graph.schema.js';

/**
 * Compiles the source of a `code` node without running it: the syntax error's message, or null.
 * The port behind which the publish path reaches the JavaScript interpreter.
 */
export type CodeSyntaxCheck = (source: string) => Promise<string | null>;

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
