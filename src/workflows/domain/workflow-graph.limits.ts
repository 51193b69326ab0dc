/** Size limits of a published workflow (promise 11, docs/architecture.md: bad input is refused, clearly). */
export const MAX_NODES = 500;
export const MAX_EDGES = 2_000;
/** UTF-8 bytes of the graph serialized as JSON, as the client sent it. */
export const MAX_GRAPH_BYTES = 256 * 1024;
/** UTF-8 bytes of one `transform` expression. */
export const MAX_EXPRESSION_BYTES = 4 * 1024;
/** UTF-8 bytes of one `code` node's source. */
export const MAX_CODE_SOURCE_BYTES = 64 * 1024;
/** Longest a node-level `timeoutMs` may be. */
export const MAX_NODE_TIMEOUT_MS = 86_400_000;
/** Beyond this, a rejected body gets the first issues and a count of the rest. */
export const MAX_REPORTED_ISSUES = 100;

export const ONE_DAY_MS = 86_400_000;
