import kafkajs, { type logCreator } from 'kafkajs';
import type { LogLevel, Logger } from '../../core/logger.js';

const { logLevel } = kafkajs;

/** kafkajs records at warn and above, as the project logger's JSON lines (`component: kafkajs`). */
export const KAFKAJS_LOG_LEVEL = logLevel.WARN;

/**
 * Broker answers that kafkajs logs as errors on every response although they are retried (by
 * kafkajs, or by `createMissingTopics`), as a new topic or a new group settles: at debug, or
 * every first start on a fresh broker would log errors. One that persists surfaces as the
 * failure of whatever was waiting for it.
 */
const SETTLING_ANSWERS = [
  'This server does not host this topic-partition',
  'There is no leader for this topic-partition as we are in the middle of a leadership election',
  // A new topic's leader named in the metadata, not yet serving it (see topic-creation.ts).
  'This server is not the leader for that topic-partition',
  'The group coordinator is not available',
  "The coordinator is loading and hence can't process requests for this group",
];

export function kafkaLogCreator(logger: Logger): logCreator {
  const log = logger.child({ component: 'kafkajs' });
  return () =>
    ({ namespace, level, log: entry }) => {
      const {
        message,
        timestamp: _timestamp,
        logger: _source,
        ...fields
      } = entry as { message: string; timestamp: string; logger?: string; error?: unknown };
      const settling = namespace === 'Connection' && typeof fields.error === 'string' && SETTLING_ANSWERS.includes(fields.error);
      log[settling ? 'debug' : toLevel(level)](message, { namespace, ...fields });
    };
}

function toLevel(level: number): LogLevel {
  if (level <= logLevel.ERROR) return 'error';
  if (level === logLevel.WARN) return 'warn';
  if (level === logLevel.INFO) return 'info';
  return 'debug';
}
