/**
 * The workflow `npm start` publishes in the dev workspace, so the printed curl example has
 * something to start: a diamond with a slow branch (fetch→wait, fetch→shape, wait+shape→done),
 * and beside it a `switch` that routes by whether a name was given, to a `map` that upper-cases
 * the name letter by letter or to `anonymous`; `greet` joins whichever branch ran (one_success).
 */
export const DEMO_WORKFLOW_NAME = 'demo';

export const demoWorkflow = {
  nodes: [
    { id: 'fetch', type: 'noop' },
    { id: 'wait', type: 'delay', config: { ms: 2_000 } },
    { id: 'shape', type: 'transform', config: { expression: '{ "greeting": "hello " & $.input.name }' } },
    { id: 'done', type: 'noop' },
    {
      id: 'route',
      type: 'switch',
      config: { cases: [{ when: '$length(input.name) > 0', to: ['letters'] }], default: ['anonymous'] },
    },
    {
      id: 'letters',
      type: 'map',
      config: { items: '$split(input.name, "")', node: { type: 'transform', config: { expression: '$uppercase(item)' } }, concurrency: 2 },
    },
    { id: 'anonymous', type: 'noop' },
    {
      id: 'greet',
      type: 'transform',
      trigger: 'one_success',
      config: { expression: '{ "shout": $exists(nodes.letters) ? $join(nodes.letters, "") : "nobody" }' },
    },
  ],
  edges: [
    { from: 'fetch', to: 'wait' },
    { from: 'fetch', to: 'shape' },
    { from: 'wait', to: 'done' },
    { from: 'shape', to: 'done' },
    { from: 'fetch', to: 'route' },
    { from: 'route', to: 'letters' },
    { from: 'route', to: 'anonymous' },
    { from: 'letters', to: 'greet' },
    { from: 'anonymous', to: 'greet' },
  ],
};
