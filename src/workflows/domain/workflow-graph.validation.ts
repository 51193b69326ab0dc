import { z } from 'zod';
import type { ValidationIssue } from '../../core/errors.js';
import { findCycles, type GraphShape } from './graph.js';
import { MAX_EDGES, MAX_GRAPH_BYTES, MAX_NODES, MAX_REPORTED_ISSUES } from './workflow-graph.limits.js';
import { type WorkflowGraph, workflowGraphSchema } from './workflow-graph.schema.js';
import { issuesFromZod } from './validation-issues.js';
import { secretReferenceIssues } from './secret-references.js';
import { controlFlowIssues } from './control-flow.validation.js';

export type DefinitionResult = { ok: true; graph: WorkflowGraph } | { ok: false; issues: ValidationIssue[] };

/**
 * Turns a publish body into a normalized graph, or lists every problem in it (promise 11, docs/architecture.md: a bad
 * graph gets a clear error naming each field, and nothing is written).
 */
export function parseWorkflowDefinition(body: unknown): DefinitionResult {
  const bytes = serializedBytes(body);
  // Checked first and alone: it bounds the work every later check does on hostile input.
  if (bytes > MAX_GRAPH_BYTES) {
    return { ok: false, issues: [{ path: '', message: `the graph is ${bytes} bytes; the limit is ${MAX_GRAPH_BYTES}` }] };
  }
  const parsed = workflowGraphSchema.safeParse(body);
  // Structure is checked even when some fields are invalid, so one round trip reports everything.
  const shape = parsed.success ? parsed.data : looseShape(body);
  const issues = [
    ...(parsed.success ? [] : issuesFromZod(parsed.error)),
    ...(shape ? validateGraphStructure(shape) : []),
    ...secretReferenceIssues(body),
    ...(parsed.success ? controlFlowIssues(parsed.data) : []),
  ];
  if (issues.length === 0 && parsed.success) return { ok: true, graph: parsed.data };
  return { ok: false, issues: capped(issues) };
}

/**
 * Rules about the graph as a whole: at least one node, count limits, unique node ids, edges
 * between declared nodes, no self-loops, no duplicate edges, no cycles (each reported in order).
 */
export function validateGraphStructure(graph: GraphShape): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  if (graph.nodes.length === 0) issues.push({ path: 'nodes', message: 'a workflow needs at least one node' });
  if (graph.nodes.length > MAX_NODES) {
    issues.push({ path: 'nodes', message: `too many nodes: ${graph.nodes.length}; the limit is ${MAX_NODES}` });
  }
  if (graph.edges.length > MAX_EDGES) {
    issues.push({ path: 'edges', message: `too many edges: ${graph.edges.length}; the limit is ${MAX_EDGES}` });
  }

  const firstDeclaration = new Map<string, number>();
  graph.nodes.forEach(({ id }, i) => {
    const first = firstDeclaration.get(id);
    if (first === undefined) firstDeclaration.set(id, i);
    else issues.push({ path: `nodes[${i}].id`, message: `duplicate node id "${id}" (first declared at nodes[${first}])` });
  });

  // Only edges that passed every other rule take part in cycle detection, so each problem is reported once.
  const soundEdges: { from: string; to: string }[] = [];
  const firstEdge = new Map<string, number>();
  graph.edges.forEach(({ from, to }, i) => {
    let sound = true;
    for (const [end, id] of [
      ['from', from],
      ['to', to],
    ] as const) {
      if (firstDeclaration.has(id)) continue;
      issues.push({ path: `edges[${i}].${end}`, message: `unknown node "${id}"` });
      sound = false;
    }
    if (from === to) {
      issues.push({ path: `edges[${i}]`, message: `self-loop on node "${from}"` });
      sound = false;
    }
    const key = JSON.stringify([from, to]);
    const first = firstEdge.get(key);
    if (first !== undefined) {
      issues.push({ path: `edges[${i}]`, message: `duplicate edge ${from} → ${to} (first declared at edges[${first}])` });
      return;
    }
    firstEdge.set(key, i);
    if (sound) soundEdges.push({ from, to });
  });

  for (const cycle of findCycles({ nodes: graph.nodes, edges: soundEdges })) {
    issues.push({ path: 'edges', message: `cycle: ${[...cycle, cycle[0]].join(' → ')}` });
  }
  return issues;
}

function serializedBytes(body: unknown): number {
  try {
    return new TextEncoder().encode(JSON.stringify(body) ?? '').length;
  } catch {
    return 0; // not serializable (a BigInt or a cycle): the schema reports it instead
  }
}

const looseShapeSchema = z.object({
  nodes: z.array(z.object({ id: z.string() })),
  edges: z.array(z.object({ from: z.string(), to: z.string() })).default([]),
});

function looseShape(body: unknown): GraphShape | null {
  const parsed = looseShapeSchema.safeParse(body);
  return parsed.success ? parsed.data : null;
}

function capped(issues: ValidationIssue[]): ValidationIssue[] {
  if (issues.length <= MAX_REPORTED_ISSUES) return issues;
  const rest = issues.length - MAX_REPORTED_ISSUES;
  return [...issues.slice(0, MAX_REPORTED_ISSUES), { path: '', message: `and ${rest} more issues` }];
}
