import { Module } from '@nestjs/common';
import { ExecutionStreams } from './application/execution-streams.js';

/**
 * One ExecutionStreams per process, shared by every role that writes executions (api, ingestor,
 * watchdog): its cache of folded states is only as useful as it is shared. Nest keeps one
 * instance of a static module however many modules import it. Needs the global EVENT_STORE,
 * CLOCK and ID_GENERATOR providers.
 */
@Module({ providers: [ExecutionStreams], exports: [ExecutionStreams] })
export class ExecutionStreamsModule {}
