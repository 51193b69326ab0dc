import jsonata from 'jsonata';
import type { ValidationIssue } from '../../core/errors.js';
import type { WorkflowGraph } from './workflow-graph.schema.js';

/**
 * Publish-time rules of `switch` and `map` nodes (docs/api.md, "Control flow"): every JSONata
 * expression they carry parses, and a switch names only its direct successors as targets. Only
 * parsing happens here (jsonata's own parser, in process): nothing is evaluated at publish.
 */
export function controlFlowIssues(graph: WorkflowGraph): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const successors = new Map<string, Set<string>>();
  for (const { from, to } of graph.edges) successors.set(from, (successors.get(from) ?? new Set()).add(to));
  graph.nodes.forEach((node, index) => {
    const at = `nodes[${index}].config`;
    if (node.type === 'switch') {
      const next = successors.get(node.id) ?? new Set<string>();
      const targets = (list: readonly string[], path: string) =>
        list.forEach((target, k) => {
          if (next.has(target)) return;
          issues.push({
            path: `${path}[${k}]`,
            message: `"${target}" is not a direct successor of switch "${node.id}"; add the edge ${node.id} → ${target}`,
          });
        });
      node.config.cases.forEach((branch, j) => {
        expressionIssue(branch.when, `${at}.cases[${j}].when`, issues);
        targets(branch.to, `${at}.cases[${j}].to`);
      });
      if (node.config.default !== undefined) targets(node.config.default, `${at}.default`);
    } else if (node.type === 'map') {
      expressionIssue(node.config.items, `${at}.items`, issues);
      if (node.config.node.type === 'transform')
        expressionIssue(node.config.node.config.expression, `${at}.node.config.expression`, issues);
    }
  });
  return issues;
}

function expressionIssue(expression: string, path: string, issues: ValidationIssue[]): void {
  try {
    jsonata(expression);
  } catch (error) {
    const { code, message, position } = error as { code?: unknown; message?: unknown; position?: unknown };
    const where = typeof position === 'number' ? ` at character ${position}` : '';
    const what = typeof code === 'string' ? `${code} ` : '';
    issues.push({ path, message: `the JSONata expression does not parse${where}: ${what}${String(message)}` });
  }
}
