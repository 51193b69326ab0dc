import kafkajs, { type logCreator } from 'kafkajs';
import type { LogLevel, Logger } from '../../core/logger.js';

const { logLevel } = kafkajs;

/** kafkajs records at warn and above, as the project logger's JSON lines (`component: kafkajs`). */
export const KAFKAJS_LOG_LEVEL = logLevel.WARN;

export function kafkaLogCreator(logger: Logger): logCreator {
  const log = logger.child({ component: 'kafkajs' });
  return () =>
    ({ namespace, level, log: entry }) => {
      const { message, timestamp: _timestamp, logger: _source, ...fields } = entry as { message: string; timestamp: string; logger?: string };
      log[toLevel(level)](message, { namespace, ...fields });
    };
}

function toLevel(level: number): LogLevel {
  if (level <= logLevel.ERROR) return 'error';
  if (level === logLevel.WARN) return 'warn';
  if (level === logLevel.INFO) return 'info';
  return 'debug';
}
