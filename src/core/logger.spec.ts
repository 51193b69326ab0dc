import { describe, expect, it } from '@jest/globals';
import { createLogger, NestLoggerAdapter, type LoggerOptions } from './logger.js';

function capture(options: LoggerOptions = {}) {
  const lines: string[] = [];
  const logger = createLogger({ clock: { now: () => new Date('2030-01-02T03:04:05.000Z') }, ...options, write: (l) => lines.push(l) });
  return { logger, records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>), lines };
}

describe('the logger', () => {
  it('writes one JSON line per record: time, level, msg first, then fields', () => {
    const { logger, lines } = capture();
    logger.info('started', { port: 3000 });
    expect(lines).toEqual(['{"time":"2030-01-02T03:04:05.000Z","level":"info","msg":"started","port":3000}']);
  });

  it('drops records below its level', () => {
    const { logger, records } = capture({ level: 'warn' });
    logger.debug('a');
    logger.info('b');
    logger.warn('c');
    logger.error('d');
    expect(records().map((r) => r.msg)).toEqual(['c', 'd']);
    expect(logger.isLevelEnabled('info')).toBe(false);
  });

  it('writes nothing when silent', () => {
    const { logger, lines } = capture({ level: 'silent' });
    logger.error('x');
    expect(lines).toEqual([]);
  });

  it('repeats child fields on every record, and never lets fields replace msg or level', () => {
    const { logger, records } = capture();
    logger.child({ component: 'http' }).child({ requestId: 'r1' }).warn('slow', { msg: 'spoof', level: 'debug' });
    expect(records()).toEqual([{ time: '2030-01-02T03:04:05.000Z', level: 'warn', msg: 'slow', component: 'http', requestId: 'r1' }]);
  });

  it('serializes errors with their stack and survives circular fields', () => {
    const { logger, records } = capture();
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    logger.error('boom', { err: new Error('kaput') });
    logger.error('loop', { circular });
    const [first, second] = records();
    expect(first.err).toMatchObject({ name: 'Error', message: 'kaput' });
    expect(String((first.err as { stack: string }).stack)).toContain('kaput');
    expect(second).toMatchObject({ msg: 'loop', logError: 'fields could not be serialized' });
  });

  describe("as Nest's logger", () => {
    it("keeps Nest's context and maps its levels (its log, route mapping and the like, to debug)", () => {
      const { logger, records } = capture({ level: 'debug' });
      const nest = new NestLoggerAdapter(logger);
      nest.log('Mapped {/v1, GET} route', 'RouterExplorer');
      nest.verbose('details');
      nest.fatal('dying');
      expect(records()).toMatchObject([
        { level: 'debug', msg: 'Mapped {/v1, GET} route', context: 'RouterExplorer' },
        { level: 'debug', msg: 'details' },
        { level: 'error', msg: 'dying', fatal: true },
      ]);
    });

    it('keeps the stack Nest passes with an error', () => {
      const { logger, records } = capture();
      new NestLoggerAdapter(logger).error('failed', 'Error: failed\n    at x (y.js:1:1)', 'ExceptionsHandler');
      expect(records()[0]).toMatchObject({
        level: 'error',
        msg: 'failed',
        context: 'ExceptionsHandler',
        stack: 'Error: failed\n    at x (y.js:1:1)',
      });
    });
  });
});
