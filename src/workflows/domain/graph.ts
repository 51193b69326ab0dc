/**
 * Directed-graph helpers shared by validation (here) and the worker's DAG runner. They only need
 * node ids and edges, so they work on any graph shape, validated or not.
 */

export interface GraphShape {
  readonly nodes: readonly { readonly id: string }[];
  readonly edges: readonly { readonly from: string; readonly to: string }[];
}

export interface GraphIndex {
  /** Node ids in declaration order (first declaration wins for a duplicated id). */
  readonly nodeIds: readonly string[];
  /** Direct predecessors of each node, in edge order, without duplicates. */
  readonly predecessors: ReadonlyMap<string, readonly string[]>;
  /** Direct successors of each node, in edge order, without duplicates. */
  readonly successors: ReadonlyMap<string, readonly string[]>;
  /** Nodes without predecessors, in declaration order: where an execution starts. */
  readonly roots: readonly string[];
  /** Nodes without successors, in declaration order: whose outputs end an execution. */
  readonly leaves: readonly string[];
}

/** Predecessor and successor lists of every node. Edges to undeclared nodes are ignored. */
export function indexGraph(graph: GraphShape): GraphIndex {
  const predecessors = new Map<string, string[]>();
  const successors = new Map<string, string[]>();
  for (const node of graph.nodes) {
    if (predecessors.has(node.id)) continue;
    predecessors.set(node.id, []);
    successors.set(node.id, []);
  }
  for (const { from, to } of graph.edges) {
    const out = successors.get(from);
    const into = predecessors.get(to);
    if (!out || !into || out.includes(to)) continue;
    out.push(to);
    into.push(from);
  }
  const nodeIds = [...predecessors.keys()];
  return {
    nodeIds,
    predecessors,
    successors,
    roots: nodeIds.filter((id) => predecessors.get(id)!.length === 0),
    leaves: nodeIds.filter((id) => successors.get(id)!.length === 0),
  };
}

/**
 * Every node after all of its predecessors. Among nodes that are ready together, the one declared
 * first comes first, so the order is deterministic and follows the author's when edges allow.
 * Only for acyclic graphs (every published graph is): throws when a cycle leaves nodes unordered.
 */
export function topologicalOrder(graph: GraphShape | GraphIndex): string[] {
  const index = 'roots' in graph ? graph : indexGraph(graph);
  const position = new Map(index.nodeIds.map((id, i) => [id, i]));
  const waitingOn = new Map(index.nodeIds.map((id) => [id, index.predecessors.get(id)!.length]));
  const ready = [...index.roots];
  const order: string[] = [];
  while (ready.length > 0) {
    const id = ready.shift()!;
    order.push(id);
    for (const next of index.successors.get(id)!) {
      const remaining = waitingOn.get(next)! - 1;
      waitingOn.set(next, remaining);
      if (remaining === 0) insertByPosition(ready, next, position);
    }
  }
  if (order.length !== index.nodeIds.length) {
    const stuck = index.nodeIds.filter((id) => waitingOn.get(id)! > 0);
    throw new Error(`topologicalOrder: the graph has a cycle among ${stuck.join(', ')}`);
  }
  return order;
}

function insertByPosition(ready: string[], id: string, position: ReadonlyMap<string, number>): void {
  const rank = position.get(id)!;
  let low = 0;
  let high = ready.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (position.get(ready[middle])! < rank) low = middle + 1;
    else high = middle;
  }
  ready.splice(low, 0, id);
}

/**
 * One cycle per strongly connected component that has one: the shortest cycle through the
 * component's first-declared node, as node ids in edge order (the first node is not repeated;
 * a self-loop is `[id]`). Cycles are listed in declaration order of their first node.
 */
export function findCycles(graph: GraphShape | GraphIndex): string[][] {
  const index = 'roots' in graph ? graph : indexGraph(graph);
  return stronglyConnectedComponents(index)
    .filter((component) => component.length > 1 || index.successors.get(component[0])!.includes(component[0]))
    .map((component) => shortestCycleThrough(index, new Set(component)))
    .sort((a, b) => index.nodeIds.indexOf(a[0]) - index.nodeIds.indexOf(b[0]));
}

/** Tarjan's algorithm, iterative: a 256 KiB body can declare thousands of nodes in a chain. */
function stronglyConnectedComponents(index: GraphIndex): string[][] {
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (id: string) => {
    order.set(id, order.size);
    low.set(id, order.get(id)!);
    stack.push(id);
    onStack.add(id);
  };
  for (const root of index.nodeIds) {
    if (order.has(root)) continue;
    visit(root);
    const frames = [{ id: root, next: 0 }];
    while (frames.length > 0) {
      const frame = frames[frames.length - 1];
      const successors = index.successors.get(frame.id)!;
      if (frame.next < successors.length) {
        const next = successors[frame.next++];
        if (!order.has(next)) {
          visit(next);
          frames.push({ id: next, next: 0 });
        } else if (onStack.has(next)) {
          low.set(frame.id, Math.min(low.get(frame.id)!, order.get(next)!));
        }
        continue;
      }
      frames.pop();
      const parent = frames[frames.length - 1];
      if (parent) low.set(parent.id, Math.min(low.get(parent.id)!, low.get(frame.id)!));
      if (low.get(frame.id) !== order.get(frame.id)) continue;
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== frame.id);
      components.push(component);
    }
  }
  return components;
}

/** Breadth-first inside the component, so the reported cycle is as short as possible. */
function shortestCycleThrough(index: GraphIndex, component: ReadonlySet<string>): string[] {
  const start = index.nodeIds.find((id) => component.has(id))!;
  const cameFrom = new Map<string, string>();
  const queue = [start];
  for (let head = 0; head < queue.length; head++) {
    const current = queue[head];
    for (const next of index.successors.get(current)!) {
      if (next === start) {
        const cycle = [current];
        while (cycle[0] !== start) cycle.unshift(cameFrom.get(cycle[0])!);
        return cycle;
      }
      if (!component.has(next) || cameFrom.has(next)) continue;
      cameFrom.set(next, current);
      queue.push(next);
    }
  }
  throw new Error('shortestCycleThrough: a strongly connected component always has a cycle');
}
