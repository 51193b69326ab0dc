import type { LoggerService } from '@nestjs/common';
import { systemClock, type Clock } from './clock.port.js';

/** Severity of one record, lowest first. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
/** The threshold a logger is configured with; `silent` writes nothing. */
export type LogThreshold = LogLevel | 'silent';

export type LogFields = Record<string, unknown>;

/**
 * The one logger: structured JSON, one line per record (`time`, `level`, `msg`, then fields).
 * Fields given to `child` are repeated on every record it writes.
 */
export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
  isLevelEnabled(level: LogLevel): boolean;
}

export const LOGGER = Symbol('Logger');

export interface LoggerOptions {
  level?: LogThreshold;
  /** Where each line goes (without its trailing newline added); stdout by default. */
  write?: (line: string) => void;
  clock?: Clock;
}

const RANK: Record<LogThreshold, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 };

export function createLogger(options: LoggerOptions = {}): Logger {
  const threshold = RANK[options.level ?? 'info'];
  const write = options.write ?? ((line: string) => void process.stdout.write(`${line}\n`));
  const clock = options.clock ?? systemClock;

  const make = (bound: LogFields): Logger => {
    const emit = (level: LogLevel, msg: string, fields?: LogFields): void => {
      if (RANK[level] < threshold) return;
      // Bound and per-call fields may not overwrite the three keys every reader relies on.
      const record = { ...bound, ...fields, time: clock.now().toISOString(), level, msg };
      write(serialize(record));
    };
    return {
      debug: (msg, fields) => emit('debug', msg, fields),
      info: (msg, fields) => emit('info', msg, fields),
      warn: (msg, fields) => emit('warn', msg, fields),
      error: (msg, fields) => emit('error', msg, fields),
      child: (fields) => make({ ...bound, ...fields }),
      isLevelEnabled: (level) => RANK[level] >= threshold,
    };
  };
  return make({});
}

function serialize(record: LogFields): string {
  const { time, level, msg, ...rest } = record;
  const ordered = { time, level, msg, ...rest };
  try {
    return JSON.stringify(ordered, replacer);
  } catch {
    // A circular or otherwise unserializable field must not lose the record itself.
    return JSON.stringify({ time, level, msg, logError: 'fields could not be serialized' });
  }
}

function replacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) {
    const code = (value as { code?: unknown }).code;
    return { name: value.name, message: value.message, ...(code !== undefined ? { code } : {}), stack: value.stack };
  }
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Map) return Object.fromEntries(value);
  if (value instanceof Set) return [...value];
  return value;
}

/**
 * Start-up progress ("dispatcher started", "embedded PGlite opened") is for LOG_LEVEL=debug:
 * until `started()`, the `info` records of the returned logger and of every child it makes are
 * written at `debug`, so that at the default level the banner is the first thing a person sees.
 * Warnings and errors pass unchanged; after `started()`, `info` is `info` again, for children
 * made before as well.
 */
export function quietUntilStarted(logger: Logger): { logger: Logger; started(): void } {
  const state = { starting: true };
  const wrap = (inner: Logger): Logger => ({
    debug: (msg, fields) => inner.debug(msg, fields),
    info: (msg, fields) => (state.starting ? inner.debug(msg, fields) : inner.info(msg, fields)),
    warn: (msg, fields) => inner.warn(msg, fields),
    error: (msg, fields) => inner.error(msg, fields),
    child: (fields) => wrap(inner.child(fields)),
    isLevelEnabled: (level) => inner.isLevelEnabled(level === 'info' && state.starting ? 'debug' : level),
  });
  return { logger: wrap(logger), started: () => void (state.starting = false) };
}

export interface NestLoggerAdapterOptions {
  /**
   * The app was created with `abortOnError: false`: whatever Nest's ExceptionHandler reports is
   * then also thrown to the code that called Nest, which reports it, so it is written at `debug`
   * instead of a second time (with its stack) at `error`.
   */
  abortOnError?: boolean;
}

/** Nest logs these errors and also throws or rejects them to its caller (listen, getUrl). */
const CONTEXTS_THAT_THROW = new Set(['NestApplication', 'NestApplicationContext']);

/**
 * Lets Nest's own messages (bootstrap, routes, its exception handler) come out as the same
 * JSON lines: pass it as `logger` to `NestFactory.create` or to `app.useLogger`. Nest's `log`
 * (module and route mapping, "application started") is chatter and goes to `debug`; its warnings
 * and errors keep their level, except errors Nest throws to its caller as well (see
 * `NestLoggerAdapterOptions`), which that caller reports.
 */
export class NestLoggerAdapter implements LoggerService {
  constructor(
    private readonly logger: Logger,
    private readonly options: NestLoggerAdapterOptions = {},
  ) {}

  log(message: unknown, ...params: unknown[]): void {
    this.emit('debug', message, params);
  }

  error(message: unknown, ...params: unknown[]): void {
    this.emit('error', message, params, true);
  }

  warn(message: unknown, ...params: unknown[]): void {
    this.emit('warn', message, params);
  }

  debug(message: unknown, ...params: unknown[]): void {
    this.emit('debug', message, params);
  }

  verbose(message: unknown, ...params: unknown[]): void {
    this.emit('debug', message, params);
  }

  fatal(message: unknown, ...params: unknown[]): void {
    this.emit('error', message, params, true, { fatal: true });
  }

  private emit(requested: LogLevel, message: unknown, params: unknown[], mayHaveStack = false, extra: LogFields = {}): void {
    // Nest passes the context (a class name) last, and for errors the stack before it.
    const rest = [...params];
    const isStack = (value: unknown): value is string => typeof value === 'string' && value.includes('\n');
    const last = rest[rest.length - 1];
    const context = typeof last === 'string' && !isStack(last) ? (rest.pop() as string) : undefined;
    const stack = mayHaveStack && isStack(rest[0]) ? (rest.shift() as string) : undefined;
    const fields: LogFields = { ...extra, ...(context !== undefined ? { context } : {}) };
    if (stack !== undefined) fields.stack = stack;
    if (rest.length > 0) fields.params = rest;
    const level = requested === 'error' && this.alsoThrown(context) ? 'debug' : requested;
    if (message instanceof Error) {
      this.logger[level](message.message, { ...fields, err: message });
    } else if (typeof message === 'string') {
      this.logger[level](message, fields);
    } else {
      this.logger[level](String((message as { message?: unknown })?.message ?? 'nest log'), { ...fields, data: message });
    }
  }

  private alsoThrown(context: string | undefined): boolean {
    if (context === undefined) return false;
    return CONTEXTS_THAT_THROW.has(context) || (context === 'ExceptionHandler' && this.options.abortOnError === false);
  }
}
