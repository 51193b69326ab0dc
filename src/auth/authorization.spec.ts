import { describe, expect, it } from '@jest/globals';
import { type DomainError, NotFoundError } from '../core/errors.js';
import { ForbiddenError } from './auth.errors.js';
import { hasWorkspaceRole, requireGlobalRole, requireWorkspaceRole, type Principal } from './authorization.js';
import { TokenRegistry } from './token-registry.js';

const TOKEN = 'operator-token-0123456789';
const registry = new TokenRegistry([{ token: TOKEN, subject: 'olga', workspaces: { acme: 'operator' }, global: ['worker'] }]);
const olga = registry.authenticate(TOKEN) as Principal;

function thrown(action: () => void): DomainError {
  try {
    action();
  } catch (error) {
    return error as DomainError;
  }
  throw new Error('expected an error');
}

describe('requireWorkspaceRole', () => {
  it('allows the role held and every weaker one', () => {
    expect(() => requireWorkspaceRole(olga, 'acme', 'operator')).not.toThrow();
    expect(() => requireWorkspaceRole(olga, 'acme', 'viewer')).not.toThrow();
  });

  it('answers forbidden for a stronger role in a workspace the principal can see', () => {
    for (const role of ['editor', 'admin'] as const) {
      const error = thrown(() => requireWorkspaceRole(olga, 'acme', role));
      expect(error).toBeInstanceOf(ForbiddenError);
      expect(error.code).toBe('forbidden');
    }
  });

  it('answers not found in another workspace, with the message a missing resource gets', () => {
    const error = thrown(() => requireWorkspaceRole(olga, 'globex', 'viewer', 'execution not found'));
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error.code).toBe('not_found');
    expect(error.message).toBe('execution not found');
  });

  it('does not let a global role stand in for a workspace role', () => {
    const admin = new TokenRegistry([{ token: TOKEN, subject: 'root', workspaces: {}, global: ['system-admin'] }]).authenticate(TOKEN)!;
    expect(thrown(() => requireWorkspaceRole(admin, 'acme', 'viewer')).code).toBe('not_found');
  });

  it('is mirrored by hasWorkspaceRole', () => {
    expect(hasWorkspaceRole(olga, 'acme', 'operator')).toBe(true);
    expect(hasWorkspaceRole(olga, 'acme', 'editor')).toBe(false);
    expect(hasWorkspaceRole(olga, 'globex', 'viewer')).toBe(false);
  });
});

describe('requireGlobalRole', () => {
  it('allows a global role the principal holds', () => {
    expect(() => requireGlobalRole(olga, 'worker')).not.toThrow();
  });

  it('answers forbidden otherwise', () => {
    const error = thrown(() => requireGlobalRole(olga, 'system-admin'));
    expect(error).toBeInstanceOf(ForbiddenError);
    expect(error.code).toBe('forbidden');
  });
});
