import { Module } from '@nestjs/common';
import { SecretStreams } from './application/secret-streams.js';

/**
 * The secrets streams, for whoever must know which secrets a workspace holds: the secrets API,
 * and the start of an execution (which refuses a graph that references missing ones). Needs
 * the global EVENT_STORE, CLOCK and ID_GENERATOR providers.
 */
@Module({ providers: [SecretStreams], exports: [SecretStreams] })
export class SecretStreamsModule {}
