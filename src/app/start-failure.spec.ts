import { describe, expect, it } from '@jest/globals';
import { ConfigError } from '../config/config.js';
import { describeStartFailure } from './banner.js';

function systemError(message: string, fields: Record<string, unknown>): Error {
  return Object.assign(new Error(message), fields);
}

describe('describeStartFailure', () => {
  it('tells a configuration error as one line, exit code 2', () => {
    expect(describeStartFailure(new ConfigError('PORT: expected an integer 0-65535, got "abc"', ['PORT']))).toEqual({
      lines: ['invalid configuration: PORT: expected an integer 0-65535, got "abc"'],
      exitCode: 2,
    });
  });

  it('names the address it cannot listen on and why', () => {
    const inUse = systemError('listen EADDRINUSE: address already in use 127.0.0.1:3000', {
      code: 'EADDRINUSE',
      syscall: 'listen',
      address: '127.0.0.1',
      port: 3000,
    });
    expect(describeStartFailure(inUse)).toEqual({
      lines: ['cannot listen on 127.0.0.1:3000: the address is already in use (another Flostra?); stop it or set PORT to a free port'],
      exitCode: 1,
    });
    const v6 = systemError('listen EACCES', { code: 'EACCES', syscall: 'listen', address: '::1', port: 80 });
    expect(describeStartFailure(v6).lines).toEqual([
      'cannot listen on [::1]:80: permission denied (ports below 1024 need privileges); set PORT to 1024 or above',
    ]);
    const unresolved = systemError('getaddrinfo ENOTFOUND flostra.invalid', {
      code: 'ENOTFOUND',
      syscall: 'getaddrinfo',
      hostname: 'flostra.invalid',
    });
    expect(describeStartFailure(unresolved, { host: 'flostra.invalid' }).lines).toEqual([
      'cannot listen on flostra.invalid: HOST does not resolve to an address',
    ]);
  });

  it('names the server it cannot reach, from the first of several addresses tried', () => {
    const refused = new AggregateError([
      systemError('connect ECONNREFUSED ::1:5432', { code: 'ECONNREFUSED', syscall: 'connect', address: '::1', port: 5432 }),
      systemError('connect ECONNREFUSED 127.0.0.1:5432', { code: 'ECONNREFUSED', syscall: 'connect', address: '127.0.0.1', port: 5432 }),
    ]);
    Object.assign(refused, { code: 'ECONNREFUSED' });
    expect(describeStartFailure(refused)).toEqual({
      lines: [
        'cannot connect to [::1]:5432: connection refused',
        'is the server that EVENT_STORE_URL, DATABASE_URL or KAFKA_BROKERS names running and reachable?',
      ],
      exitCode: 1,
    });
    const unresolved = systemError('getaddrinfo ENOTFOUND db.invalid', {
      code: 'ENOTFOUND',
      syscall: 'getaddrinfo',
      hostname: 'db.invalid',
    });
    expect(describeStartFailure(unresolved, { host: '127.0.0.1' }).lines[0]).toBe(
      'cannot connect to db.invalid: the host name does not resolve',
    );
  });

  it('names the file it cannot write, and the data directory when the file is in it', () => {
    const readOnly = systemError("EROFS: read-only file system, mkdir '/data/pgdata'", {
      code: 'EROFS',
      syscall: 'mkdir',
      path: '/data/pgdata',
    });
    expect(describeStartFailure(readOnly, { dataDir: '/data' })).toEqual({
      lines: [
        'cannot create /data/pgdata: read-only file system',
        'FLOSTRA_DATA_DIR (/data) must be a directory this process can create and write',
      ],
      exitCode: 1,
    });
    expect(describeStartFailure(readOnly, { dataDir: '/elsewhere' }).lines).toEqual(['cannot create /data/pgdata: read-only file system']);
  });

  it('gives anything else as the first line of its message, never its stack', () => {
    const error = new Error('PGlite failed to initialize properly\nmore detail', { cause: new Error('wasm trap') });
    const { lines, exitCode } = describeStartFailure(error);
    expect(exitCode).toBe(1);
    expect(lines).toEqual(['failed to start: PGlite failed to initialize properly: wasm trap', '(LOG_LEVEL=debug prints the stack trace)']);
    expect(lines.join('\n')).not.toMatch(/\s+at /);
    expect(describeStartFailure('a string').lines[0]).toBe('failed to start: a string');
  });
});
