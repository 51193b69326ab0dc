/**
 * The workflow `npm start` publishes in the dev workspace, so the printed curl example has
 * something to start: a diamond with a slow branch (A→B, A→C, B+C→D).
 */
export const DEMO_WORKFLOW_NAME = 'demo';

export const demoWorkflow = {
  nodes: [
    { id: 'fetch', type: 'noop' },
    { id: 'wait', type: 'delay', config: { ms: 500 } },
    { id: 'shape', type: 'transform', config: { expression: '{ "greeting": "hello " & $.input.name }' } },
    { id: 'done', type: 'noop' },
  ],
  edges: [
    { from: 'fetch', to: 'wait' },
    { from: 'fetch', to: 'shape' },
    { from: 'wait', to: 'done' },
    { from: 'shape', to: 'done' },
  ],
};
