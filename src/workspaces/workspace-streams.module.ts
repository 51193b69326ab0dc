import { Module } from '@nestjs/common';
import { WorkspaceStreams } from './application/workspace-streams.js';

/**
 * One WorkspaceStreams per process, shared by the roles that read or write workspace streams
 * (api: settings and starts; dispatcher: the admission). Needs the global EVENT_STORE, CLOCK and ID_GENERATOR.
 */
@Module({ providers: [WorkspaceStreams], exports: [WorkspaceStreams] })
export class WorkspaceStreamsModule {}
