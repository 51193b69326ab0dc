import { TOPICS, type Bus, type OutgoingMessage } from '../../core/bus.port.js';

/**
 * Where an attempt's results go. Two adapters: the bus (`flostra.results.v1`, which the ingestor
 * consumes: a worker process of its own, or any worker told so), and the in-process one of
 * src/app, which hands them to the ingestor of the worker's own process. Either way the messages
 * of one `send` are one execution's, sent in order after those of earlier sends, and a rejection
 * means they may not have arrived: the caller fails the attempt visibly (promise 6,
 * docs/architecture.md).
 */
export interface ResultSink {
  /** Resolves once the results are safe: acknowledged by the broker, or handled by the ingestor. */
  send(messages: OutgoingMessage[]): Promise<void>;
  /**
   * True when `send` resolves only once the control plane has handled the results (appended, or
   * dead-lettered with the reason): the attempt then has nothing to keep its lease alive for.
   */
  readonly handledOnSend: boolean;
}

/** Results published to `flostra.results.v1`; `send` resolves on the broker's acknowledgement. */
export function busResultSink(bus: Bus): ResultSink {
  return { handledOnSend: false, send: (messages) => bus.publish(TOPICS.results, messages) };
}
