import { Inject, Injectable } from '@nestjs/common';
import { CLOCK, type Clock } from '../../core/clock.port.js';
import { type CommandOutcome, handleCommand } from '../../core/command-handler.js';
import { fold } from '../../core/decider.js';
import { EVENT_STORE, type EventStore } from '../../core/event-store.port.js';
import { ID_GENERATOR, type IdGenerator } from '../../core/ids.js';
import type { SecretsCommand } from '../domain/secrets.commands.js';
import { secretsDecider, type SecretsState } from '../domain/secrets.decider.js';
import { parseSecretsEvent, SECRETS_SCHEMA_VERSION, secretsStreamId, type SecretsEvent } from '../domain/secrets.events.js';

export type SecretsOutcome = CommandOutcome<SecretsEvent, SecretsState>;

/**
 * The secrets streams (`secrets-<workspaceId>`): which secrets exist is read from the stream
 * itself, never from a projection, so a secret put a moment ago is there for the next start or
 * resolution. Commands go through the generic command handler (read, fold, decide, one append
 * with the expected revision).
 */
@Injectable()
export class SecretStreams {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(CLOCK) readonly clock: Clock,
    @Inject(ID_GENERATOR) readonly ids: IdGenerator,
  ) {}

  async load(workspaceId: string): Promise<SecretsState> {
    const history = await this.store.readStream(secretsStreamId(workspaceId));
    return fold(secretsDecider, history.map(parseSecretsEvent));
  }

  /** The names of `names` the workspace has no secret of, sorted; none for an empty list (no read). */
  async missing(workspaceId: string, names: readonly string[]): Promise<string[]> {
    if (names.length === 0) return [];
    const state = await this.load(workspaceId);
    return [...new Set(names)].filter((name) => !state.current.has(name)).sort();
  }

  handle(workspaceId: string, command: SecretsCommand): Promise<SecretsOutcome> {
    return handleCommand({
      store: this.store,
      streamId: secretsStreamId(workspaceId),
      decider: secretsDecider,
      parseEvent: parseSecretsEvent,
      command,
      eventId: () => this.ids.uuid(),
      // Who did it and in which workspace, on every event (the audit trail reads both).
      metadata: { schemaVersion: SECRETS_SCHEMA_VERSION, actor: command.metadata.actor, workspaceId },
    });
  }
}
