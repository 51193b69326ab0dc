import type { AppendResult, EventStore, EventToAppend, ExpectedRevision } from '../core/event-store.port.js';
import type { Metrics } from '../core/metrics.port.js';

/**
 * The event store with the latency of every append measured (`flostra_event_store_append_seconds`);
 * everything else is the store's own. Wraps the store once, where the process builds its app.
 */
export function measureAppends(store: EventStore, metrics: Pick<Metrics, 'eventStoreAppend'>): EventStore {
  return {
    async appendToStream(
      streamId: string,
      events: EventToAppend[],
      options: { expectedRevision: ExpectedRevision },
    ): Promise<AppendResult> {
      const started = performance.now();
      let failed = true;
      try {
        const result = await store.appendToStream(streamId, events, options);
        failed = false;
        return result;
      } finally {
        metrics.eventStoreAppend((performance.now() - started) / 1000, failed);
      }
    },
    readStream: (streamId, options) => store.readStream(streamId, options),
    // Optional in the port: kept only where the store has it, so callers still see whether it can.
    ...(store.readStreams === undefined ? {} : { readStreams: (streamIds: readonly string[]) => store.readStreams!(streamIds) }),
    readAll: (options) => store.readAll(options),
    subscribeToAll: (options) => store.subscribeToAll(options),
    headPosition: () => store.headPosition(),
    isPosition: (text) => store.isPosition(text),
    isAheadOfLog: (position) => store.isAheadOfLog(position),
    deleteStream: (streamId, options) => store.deleteStream(streamId, options),
    close: () => store.close(),
  };
}

/** The `store` label of an event store: what its adapter says it is. */
export function storeKindOf(store: EventStore): string {
  const kind = (store as { kind?: unknown }).kind;
  return typeof kind === 'string' ? kind : 'unknown';
}
