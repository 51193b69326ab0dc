import type { CommandMetadata } from '../../core/decider.js';

/**
 * Makes `version` of a secret current, its value being the row `valueId` of `secret_values`,
 * written (encrypted, with the version bound in) just before: the handler reads the stream to
 * learn the next version, so the decider refuses a version someone else took meanwhile.
 */
export type PutSecret = {
  type: 'PutSecret';
  data: { name: string; version: number; valueId: string };
  metadata: CommandMetadata;
};

/** Deletes a secret; NotFoundError when there is none of that name. */
export type DeleteSecret = {
  type: 'DeleteSecret';
  data: { name: string };
  metadata: CommandMetadata;
};

export type SecretsCommand = PutSecret | DeleteSecret;
