import type { ExecutionError } from '../../executions/domain/execution.events.js';
import { MAX_MAP_ITEMS, type NodeOfType, type WorkflowNode } from '../../workflows/domain/workflow-graph.schema.js';
import type { DagEvent, Evaluate, MapItemFacts, NodeContext } from './dag.types.js';
import { NodeError } from './node-error.js';
import { tryNode, type TryNodeOptions } from './node-retry.js';

/** Item facts buffered before they go out as one `map_items` event (whichever bound comes first). */
const FLUSH_FACTS = 256;
const FLUSH_BYTES = 64 * 1024;
const FLUSH_MS = 20;

export interface MapRunOptions extends TryNodeOptions {
  /** Outputs of the items that finished earlier, by index: never run again. */
  readonly completed: Readonly<Record<string, unknown>>;
  readonly evaluate?: Evaluate;
  readonly checkOutput?: (nodeId: string, output: unknown) => void;
  /** Takes each batch of item facts; resolves once it may count as handed over. */
  readonly emit: (event: DagEvent) => Promise<void>;
}

/**
 * One map node of one attempt: `tryMap` is its executor for `tryNode`, so the map's own retry
 * policy applies to it as to any node; the items that finished (in an earlier attempt or an
 * earlier try) stay finished, and a later try runs only the others.
 *
 * Each item runs the inner node under the inner node's retry policy, with the input
 * `{ item, index, input, nodes }` and the idempotency key `<executionId>:<nodeId>:<index>`, at
 * most `concurrency` at once, started in index order. Once an item failed past its retries, no
 * new item starts, and items still waiting for an interpreter thread are dropped (recorded as
 * started only, as items of a cancelled attempt); those running finish (and are recorded), then
 * the map fails with the first failure's code. The output is the items' outputs in item order.
 */
export class MapRun {
  private readonly done = new Map<number, unknown>();
  private facts: { started: number[]; completed: MapItemFacts['completed'][number][]; failed: MapItemFacts['failed'][number][] } = {
    started: [],
    completed: [],
    failed: [],
  };
  private factCount = 0;
  private factBytes = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private emitted: Promise<void> = Promise.resolve();

  constructor(
    private readonly node: NodeOfType<'map'>,
    private readonly options: MapRunOptions,
  ) {
    for (const [index, output] of Object.entries(options.completed)) {
      if (/^(0|[1-9][0-9]*)$/.test(index)) this.done.set(Number(index), output);
    }
  }

  readonly tryMap = async (_node: WorkflowNode, ctx: NodeContext): Promise<unknown> => {
    const { node } = this;
    if (this.options.evaluate === undefined) throw new NodeError('map_unavailable', `no evaluator for the items of map ${node.id}`, false);
    const value = await this.options.evaluate(node.config.items, ctx.input, ctx.signal);
    const items = value === null || value === undefined ? [] : Array.isArray(value) ? (value as unknown[]) : [value];
    if (items.length > MAX_MAP_ITEMS) {
      throw new NodeError('map_too_large', `map ${node.id} has ${items.length} items; the limit is ${MAX_MAP_ITEMS}`, false);
    }
    const pending = items.map((_, index) => index).filter((index) => !this.done.has(index));
    const inner: WorkflowNode = { ...node.config.node, id: node.id, trigger: 'all_success' };
    let failure: { index: number; error: ExecutionError } | undefined;
    // Promise 13 (docs/architecture.md): once the map failed, items still waiting for an interpreter never start.
    const failed = new AbortController();
    let next = 0;
    const worker = async () => {
      while (next < pending.length && failure === undefined && !ctx.signal.aborted) {
        const index = pending[next++];
        this.record('started', index);
        const outcome = await tryNode(
          inner,
          {
            ...ctx,
            idempotencyKey: `${ctx.idempotencyKey}:${index}`,
            input: { input: ctx.input.input, nodes: ctx.input.nodes, item: items[index], index },
            dropIfWaiting: failed.signal,
          },
          this.options,
        );
        if (outcome.status === 'succeeded') {
          this.done.set(index, outcome.output);
          this.record('completed', index, outcome.output);
        } else if (outcome.status === 'failed') {
          failure ??= { index, error: outcome.error };
          failed.abort();
          this.record('failed', index, outcome.error);
        }
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.min(node.config.concurrency, pending.length) }, worker));
    } finally {
      await this.flush();
    }
    ctx.signal.throwIfAborted();
    if (failure !== undefined) {
      const { index, error } = failure;
      throw new NodeError(error.code, `item ${index} of ${items.length} failed: ${error.message}`, error.retryable);
    }
    const output = items.map((_, index) => this.done.get(index) ?? null);
    this.options.checkOutput?.(node.id, output);
    return output;
  };

  private record(kind: 'started', index: number): void;
  private record(kind: 'completed', index: number, output: unknown): void;
  private record(kind: 'failed', index: number, error: ExecutionError): void;
  private record(kind: 'started' | 'completed' | 'failed', index: number, value?: unknown): void {
    const bytes = kind === 'started' ? 8 : Buffer.byteLength(JSON.stringify(value ?? null)) + 16;
    if (this.factCount > 0 && this.factBytes + bytes > FLUSH_BYTES) void this.flush();
    if (kind === 'started') this.facts.started.push(index);
    else if (kind === 'completed') this.facts.completed.push({ index, output: value ?? null });
    else this.facts.failed.push({ index, error: value as ExecutionError });
    this.factCount++;
    this.factBytes += bytes;
    if (this.factCount >= FLUSH_FACTS) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), FLUSH_MS);
  }

  /** Hands the buffered facts over; resolves once everything handed over so far was taken. */
  private flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.factCount > 0) {
      const event: DagEvent = { kind: 'map_items', nodeId: this.node.id, ...this.facts };
      this.facts = { started: [], completed: [], failed: [] };
      this.factCount = 0;
      this.factBytes = 0;
      // Chained: batches go out in order, each after the one before was taken.
      this.emitted = this.emitted.then(() => this.options.emit(event));
    }
    return this.emitted;
  }
}
