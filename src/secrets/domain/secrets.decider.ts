import type { Decider } from '../../core/decider.js';
import { DomainError, NotFoundError } from '../../core/errors.js';
import type { DeleteSecret, PutSecret, SecretsCommand } from './secrets.commands.js';
import type { SecretsEvent } from './secrets.events.js';

/** The current version of one secret and the row that holds its ciphertext. */
export interface CurrentSecret {
  readonly name: string;
  readonly version: number;
  readonly valueId: string;
  readonly updatedAt: string;
}

/**
 * A workspace's secrets, folded from its stream. Maps, not objects: a name like `__proto__` or
 * `constructor` is a valid secret name.
 */
export interface SecretsState {
  /** The secrets that exist now, by name. */
  readonly current: ReadonlyMap<string, CurrentSecret>;
  /** The last version ever put of each name, deleted ones included: versions never repeat. */
  readonly lastVersions: ReadonlyMap<string, number>;
}

/** The version a PUT meant to write was taken by a concurrent one: write again with the next. */
export class SecretVersionTakenError extends DomainError {
  constructor(name: string, version: number) {
    super('concurrency_conflict', `version ${version} of secret ${name} was written concurrently`, { name, version });
  }
}

const initialState = (): SecretsState => ({ current: new Map(), lastVersions: new Map() });

/** The version the next put of `name` gets: one more than any before it, deleted ones included. */
export function nextSecretVersion(state: SecretsState, name: string): number {
  return (state.lastVersions.get(name) ?? 0) + 1;
}

function putSecret(command: PutSecret, state: SecretsState): SecretsEvent[] {
  const { name, version, valueId } = command.data;
  // The value was encrypted with this version bound in: it can only be this version.
  if (version !== nextSecretVersion(state, name)) throw new SecretVersionTakenError(name, version);
  return [{ type: 'SecretPut', data: { name, version, valueId, updatedAt: command.metadata.now.toISOString() } }];
}

function deleteSecret(command: DeleteSecret, state: SecretsState): SecretsEvent[] {
  const secret = state.current.get(command.data.name);
  if (secret === undefined) throw new NotFoundError(`secret ${command.data.name} not found`);
  const { name, version, valueId } = secret;
  return [{ type: 'SecretDeleted', data: { name, version, valueId, deletedAt: command.metadata.now.toISOString() } }];
}

function decide(command: SecretsCommand, state: SecretsState): SecretsEvent[] {
  switch (command.type) {
    case 'PutSecret':
      return putSecret(command, state);
    case 'DeleteSecret':
      return deleteSecret(command, state);
    default: {
      const unknown: never = command;
      throw new Error(`unknown secrets command ${(unknown as { type: string }).type}`);
    }
  }
}

function evolve(state: SecretsState, event: SecretsEvent): SecretsState {
  switch (event.type) {
    case 'SecretPut': {
      const { name, version, valueId, updatedAt } = event.data;
      return {
        current: new Map(state.current).set(name, { name, version, valueId, updatedAt }),
        lastVersions: new Map(state.lastVersions).set(name, version),
      };
    }
    case 'SecretDeleted': {
      const current = new Map(state.current);
      current.delete(event.data.name);
      return { current, lastVersions: state.lastVersions };
    }
    default: {
      const unknown: never = event;
      throw new Error(`unknown secrets event ${(unknown as { type: string }).type}`);
    }
  }
}

/** The rules of a workspace's secrets stream: versions 1, 2, … per name, never reused; only existing secrets are deleted. */
export const secretsDecider: Decider<SecretsCommand, SecretsEvent, SecretsState> = { decide, evolve, initialState };
