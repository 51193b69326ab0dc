import { describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { TokenRegistry } from './token-registry.js';

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';

describe('the token registry', () => {
  const registry = () =>
    new TokenRegistry([
      { token: ALICE, subject: 'alice', workspaces: { acme: 'admin' }, global: [] },
      { token: BOB, subject: 'bob', workspaces: {}, global: ['worker'] },
    ]);

  it('authenticates known tokens only', () => {
    const tokens = registry();
    expect(tokens.authenticate(ALICE)?.subject).toBe('alice');
    expect(tokens.authenticate(BOB)?.global.has('worker')).toBe(true);
    expect(tokens.authenticate(`${ALICE}x`)).toBeNull();
    expect(tokens.authenticate('')).toBeNull();
    expect(tokens.authenticate(undefined)).toBeNull();
  });

  it('never keeps the token itself in the principal', () => {
    expect(JSON.stringify(registry().authenticate(ALICE), (_k, v: unknown) => (v instanceof Map ? [...v] : v))).not.toContain(ALICE);
  });

  it('swaps grants at runtime and tells its listeners', () => {
    const tokens = registry();
    const alice = tokens.authenticate(ALICE)!;
    let changes = 0;
    const unsubscribe = tokens.onChange(() => changes++);
    tokens.replace([{ token: BOB, subject: 'bob', workspaces: { acme: 'viewer' }, global: [] }]);
    expect(changes).toBe(1);
    expect(tokens.authenticate(ALICE)).toBeNull();
    expect(tokens.current(alice)).toBeNull();
    expect(tokens.authenticate(BOB)?.workspaces.get('acme')).toBe('viewer');
    unsubscribe();
    tokens.replace([]);
    expect(changes).toBe(1);
  });

  it('tells every listener even when one fails', () => {
    const tokens = registry();
    let told = 0;
    tokens.onChange(() => {
      throw new Error('listener bug');
    });
    tokens.onChange(() => told++);
    expect(() => tokens.replace([])).toThrow(AggregateError);
    expect(told).toBe(1);
  });

  it('authenticates a token known by its SHA-256 digest only', () => {
    const digest = createHash('sha256').update(ALICE).digest('hex');
    const tokens = new TokenRegistry([{ tokenSha256: digest, subject: 'alice', workspaces: { acme: 'viewer' }, global: [] }]);
    expect(tokens.authenticate(ALICE)?.subject).toBe('alice');
    expect(tokens.authenticate(digest)).toBeNull();
    expect(tokens.authenticate(BOB)).toBeNull();
  });

  it('counts what a new set of grants would change, changing nothing', () => {
    const tokens = registry();
    const changes = tokens.compare([
      { token: ALICE, subject: 'alice', workspaces: { acme: 'viewer' }, global: [] },
      { token: 'carol-token-0123456789', subject: 'carol', workspaces: {}, global: [] },
    ]);
    expect(changes).toEqual({ tokens: 2, added: 1, removed: 1, changed: 1 });
    expect(tokens.authenticate(BOB)).not.toBeNull();
    expect(tokens.authenticate(ALICE)?.workspaces.get('acme')).toBe('admin');
    const digest = createHash('sha256').update(BOB).digest('hex');
    expect(
      tokens.compare([
        { token: ALICE, subject: 'alice', workspaces: { acme: 'admin' }, global: [] },
        { tokenSha256: digest, subject: 'bob', workspaces: {}, global: ['worker'] },
      ]),
    ).toEqual({ tokens: 2, added: 0, removed: 0, changed: 0 });
  });
});
