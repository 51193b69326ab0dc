import { describe, it } from '@jest/globals';
import { deciderSpecification } from '../../../test/support/core/decider-specification.js';
import { NotFoundError } from '../../core/errors.js';
import type { SecretsCommand } from './secrets.commands.js';
import { secretsDecider, SecretVersionTakenError } from './secrets.decider.js';
import type { SecretDeleted, SecretPut } from './secrets.events.js';

const spec = deciderSpecification(secretsDecider);
const now = new Date('2030-01-02T03:04:05.000Z');
const at = now.toISOString();
const ids = ['00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000002', '00000000-0000-4000-8000-000000000003'];

const put = (name: string, version: number, valueId: string): SecretsCommand => ({
  type: 'PutSecret',
  data: { name, version, valueId },
  metadata: { now, actor: 'alice' },
});
const remove = (name: string): SecretsCommand => ({ type: 'DeleteSecret', data: { name }, metadata: { now, actor: 'alice' } });
const wasPut = (name: string, version: number, valueId: string): SecretPut => ({
  type: 'SecretPut',
  data: { name, version, valueId, updatedAt: at },
});
const wasDeleted = (name: string, version: number, valueId: string): SecretDeleted => ({
  type: 'SecretDeleted',
  data: { name, version, valueId, deletedAt: at },
});

describe('putting a secret', () => {
  it('makes version 1 of a new name current', () => {
    spec
      .given([])
      .when(put('API_KEY', 1, ids[0]))
      .then([wasPut('API_KEY', 1, ids[0])]);
  });

  it('makes the next version of an existing name current', () => {
    spec
      .given([wasPut('API_KEY', 1, ids[0])])
      .when(put('API_KEY', 2, ids[1]))
      .then([wasPut('API_KEY', 2, ids[1])]);
  });

  it('refuses a version that a concurrent put already took (its value was encrypted with that version bound in)', () => {
    spec
      .given([wasPut('API_KEY', 1, ids[0])])
      .when(put('API_KEY', 1, ids[1]))
      .thenThrows(SecretVersionTakenError);
    spec
      .given([])
      .when(put('API_KEY', 2, ids[1]))
      .thenThrows('concurrency_conflict');
  });

  it('never reuses a version after a delete', () => {
    spec
      .given([wasPut('API_KEY', 1, ids[0]), wasPut('API_KEY', 2, ids[1]), wasDeleted('API_KEY', 2, ids[1])])
      .when(put('API_KEY', 3, ids[2]))
      .then([wasPut('API_KEY', 3, ids[2])]);
    spec
      .given([wasPut('API_KEY', 1, ids[0]), wasDeleted('API_KEY', 1, ids[0])])
      .when(put('API_KEY', 1, ids[2]))
      .thenThrows(SecretVersionTakenError);
  });

  it('numbers each name on its own, and a name like __proto__ is just a name', () => {
    spec
      .given([wasPut('a', 1, ids[0]), wasPut('a', 2, ids[1])])
      .when(put('__proto__', 1, ids[2]))
      .thenState({
        current: new Map([
          ['a', { name: 'a', version: 2, valueId: ids[1], updatedAt: at }],
          ['__proto__', { name: '__proto__', version: 1, valueId: ids[2], updatedAt: at }],
        ]),
        lastVersions: new Map([
          ['a', 2],
          ['__proto__', 1],
        ]),
      });
  });
});

describe('deleting a secret', () => {
  it('records the deleted version and the row it no longer references', () => {
    spec
      .given([wasPut('API_KEY', 1, ids[0]), wasPut('API_KEY', 2, ids[1])])
      .when(remove('API_KEY'))
      .then([wasDeleted('API_KEY', 2, ids[1])]);
  });

  it('refuses a name that does not exist, or no longer does', () => {
    spec.given([]).when(remove('API_KEY')).thenThrows(NotFoundError);
    spec
      .given([wasPut('API_KEY', 1, ids[0]), wasDeleted('API_KEY', 1, ids[0])])
      .when(remove('API_KEY'))
      .thenThrows('not_found');
  });

  it('leaves the other names alone and remembers the last version', () => {
    spec
      .given([wasPut('a', 1, ids[0]), wasPut('b', 1, ids[1])])
      .when(remove('a'))
      .thenState({
        current: new Map([['b', { name: 'b', version: 1, valueId: ids[1], updatedAt: at }]]),
        lastVersions: new Map([
          ['a', 1],
          ['b', 1],
        ]),
      });
  });
});
