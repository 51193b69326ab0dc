import { describe, expect, it } from '@jest/globals';
import kafkajs from 'kafkajs';
import { createLogger } from '../../core/logger.js';
import { kafkaLogCreator } from './kafka-logging.js';

const { logLevel } = kafkajs;

/** What kafkajs' log creator would print, as the project logger's records. */
function logged(namespace: string, level: number, entry: Record<string, unknown>) {
  const lines: { level: string; msg: string }[] = [];
  const logger = createLogger({ level: 'debug', write: (line) => lines.push(JSON.parse(line) as { level: string; msg: string }) });
  kafkaLogCreator(logger)(logLevel.DEBUG)({
    namespace,
    level,
    label: 'ERROR',
    log: { timestamp: 'now', message: 'Response Metadata(key: 3, version: 6)', ...entry },
  });
  return lines.map(({ level: l }) => l);
}

describe('kafkajs records in the project log', () => {
  it('keep their level', () => {
    expect(logged('Connection', logLevel.ERROR, { error: 'Not authorized to access topics: [Topic authorization failed]' })).toEqual([
      'error',
    ]);
    expect(logged('Consumer', logLevel.ERROR, { error: 'The group coordinator is not available' })).toEqual(['error']);
    expect(logged('Producer', logLevel.WARN, {})).toEqual(['warn']);
  });

  it('put broker answers that are retried while a new topic or group settles at debug', () => {
    for (const answer of [
      'This server does not host this topic-partition',
      'This server is not the leader for that topic-partition',
      'The group coordinator is not available',
    ]) {
      expect(logged('Connection', logLevel.ERROR, { error: answer })).toEqual(['debug']);
    }
  });
});
