import { describe, expect, it } from '@jest/globals';
import { createLogger, NestLoggerAdapter, quietUntilStarted, type LoggerOptions } from './logger.js';

function capture(options: LoggerOptions = {}) {
  const lines: string[] = [];
  const logger = createLogger({ clock: { now: () => new Date('2030-01-02T03:04:05.000Z') }, ...options, write: (l) => lines.push(l) });
  return { logger, records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('a logger quiet until started', () => {
  it('writes info as debug until started, for children made before as well, and info after', () => {
    const { logger: base, records } = capture({ level: 'debug' });
    const { logger, started } = quietUntilStarted(base);
    const child = logger.child({ component: 'dispatcher' });
    child.info('dispatcher started');
    started();
    child.info('execution failed over');
    logger.child({ component: 'late' }).info('late child');
    expect(records()).toMatchObject([
      { level: 'debug', msg: 'dispatcher started', component: 'dispatcher' },
      { level: 'info', msg: 'execution failed over', component: 'dispatcher' },
      { level: 'info', msg: 'late child', component: 'late' },
    ]);
  });

  it('at the default level shows nothing of the start-up progress, but its warnings and errors', () => {
    const { logger: base, records } = capture();
    const { logger } = quietUntilStarted(base);
    const child = logger.child({ component: 'projector' });
    child.info('projection runner started');
    child.debug('details');
    child.warn('lagging');
    child.error('failed');
    expect(records().map((r) => [r.level, r.msg])).toEqual([
      ['warn', 'lagging'],
      ['error', 'failed'],
    ]);
  });

  it('answers isLevelEnabled for the level a record would be written at', () => {
    const { logger: base } = capture();
    const { logger, started } = quietUntilStarted(base);
    expect(logger.isLevelEnabled('info')).toBe(false);
    expect(logger.isLevelEnabled('warn')).toBe(true);
    started();
    expect(logger.child({ a: 1 }).isLevelEnabled('info')).toBe(true);
    expect(logger.isLevelEnabled('debug')).toBe(false);
  });
});

describe('Nest errors that Nest also throws to its caller', () => {
  it('are written at debug: the caller reports them once', () => {
    const { logger, records } = capture({ level: 'debug' });
    const nest = new NestLoggerAdapter(logger, { abortOnError: false });
    nest.error('Error: listen EADDRINUSE: address already in use 127.0.0.1:3000', 'NestApplication');
    nest.error(new Error("Nest can't resolve dependencies"), undefined, 'ExceptionHandler');
    nest.error('failed', 'Error: failed\n    at x (y.js:1:1)', 'ExceptionsHandler');
    expect(records()).toMatchObject([
      { level: 'debug', context: 'NestApplication' },
      { level: 'debug', msg: "Nest can't resolve dependencies", context: 'ExceptionHandler' },
      { level: 'error', msg: 'failed', context: 'ExceptionsHandler' },
    ]);
  });

  it('keep their level when Nest would abort instead of throwing', () => {
    const { logger, records } = capture();
    new NestLoggerAdapter(logger).error(new Error('boom'), undefined, 'ExceptionHandler');
    expect(records()).toMatchObject([{ level: 'error', msg: 'boom', context: 'ExceptionHandler' }]);
  });
});
