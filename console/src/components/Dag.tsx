// A workflow graph drawn with React Flow, laid out left to right by dagre. Nodes are coloured
// by state when states are given (the live execution page), and can be selected. A waiting node
// says what it waits for (`waits`: a task's queue and claim, an approval).
import dagre from '@dagrejs/dagre';
import { Background, Controls, Position, ReactFlow, type Edge, type Node } from '@xyflow/react';
import { useMemo } from 'react';
import type { NodeState } from '../lib/event-log';

export interface GraphNode {
  id: string;
  type: string;
  /** For a map, the node it runs per item (`config.node.type`). */
  config?: { node?: { type?: string } };
}

/** What a node's label says it is: its type, and for a map the type it runs per item. */
export function nodeKind(node: GraphNode): string {
  const inner = node.type === 'map' ? node.config?.node?.type : undefined;
  return inner === undefined ? node.type : `map of ${inner}`;
}
export interface Graph {
  nodes: GraphNode[];
  edges: { from: string; to: string }[];
}

const WIDTH = 160;
const HEIGHT = 64;

function layout(graph: Graph): Record<string, { x: number; y: number }> {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: 'LR', nodesep: 30, ranksep: 60, marginx: 10, marginy: 10 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const node of graph.nodes) g.setNode(node.id, { width: WIDTH, height: HEIGHT });
  for (const edge of graph.edges) g.setEdge(edge.from, edge.to);
  dagre.layout(g);
  const positions: Record<string, { x: number; y: number }> = {};
  for (const node of graph.nodes) {
    const laid = g.node(node.id);
    // dagre gives centres; React Flow wants top-left corners.
    positions[node.id] = { x: laid.x - WIDTH / 2, y: laid.y - HEIGHT / 2 };
  }
  return positions;
}

export function Dag(props: {
  graph: Graph;
  states?: Record<string, NodeState>;
  /** Extra words per node (a map's items done), after its state. */
  notes?: Record<string, string>;
  /** What a waiting node waits for (a task's queue and claim, an approval). */
  waits?: Record<string, string>;
  selected?: string | null;
  onSelect?: (nodeId: string) => void;
}) {
  const { graph, states, notes, waits, selected, onSelect } = props;
  const positions = useMemo(() => layout(graph), [graph]);
  const nodes: Node[] = graph.nodes.map((node) => {
    const state = states?.[node.id];
    const note = notes?.[node.id];
    const kind = nodeKind(node);
    return {
      id: node.id,
      position: positions[node.id],
      data: {
        label: (
          <div className="dag-label" data-node={node.id} data-state={state ?? ''}>
            <strong>{node.id}</strong>
            <span>
              {state === undefined ? kind : `${kind} · ${state.replace('_', ' ')}`}
              {note === undefined ? '' : ` · ${note}`}
            </span>
            {waits?.[node.id] !== undefined ? (
              <em className="dag-wait" data-testid="dag-wait" title={waits[node.id]}>
                {waits[node.id]}
              </em>
            ) : null}
          </div>
        ),
      },
      className: `dag-node${state ? ` state-${state}` : ''}${selected === node.id ? ' selected-node' : ''}`,
      width: WIDTH,
      height: HEIGHT,
      // Left to right, as dagre lays it out: edges leave on the right and arrive on the left.
      sourcePosition: Position.Right,
      targetPosition: Position.Left,
      draggable: false,
      connectable: false,
    };
  });
  const edges: Edge[] = graph.edges.map((edge) => ({
    id: `${edge.from}->${edge.to}`,
    source: edge.from,
    target: edge.to,
    animated: states?.[edge.from] === 'succeeded' && states?.[edge.to] === 'running',
  }));
  return (
    <div className="dag" data-testid="dag">
      <ReactFlow
        nodes={nodes}
        edges={edges}
        fitView
        nodesDraggable={false}
        nodesConnectable={false}
        elementsSelectable={onSelect !== undefined}
        onNodeClick={onSelect === undefined ? undefined : (_event, node) => onSelect(node.id)}
        minZoom={0.2}
        maxZoom={2}
      >
        <Background gap={16} />
        <Controls showInteractive={false} />
      </ReactFlow>
    </div>
  );
}
