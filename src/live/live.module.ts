import { Module } from '@nestjs/common';
import { EVENT_STORE, type EventStore } from '../core/event-store.port.js';
import { RetentionHorizon } from '../retention/application/retention-horizon.js';
import { ExecutionsModule } from '../executions/executions.module.js';
import { LiveFeed } from './live-feed.js';
import { LiveController } from './live.controller.js';
import { LiveSettings } from './live.settings.js';
import { LiveStreams } from './live-streams.service.js';

/**
 * Live progress over SSE. Needs TIMELINE_READER (the projector's timeline), TOKEN_REGISTRY
 * and LOGGER from the app; one LiveFeed per process serves every stream.
 */
@Module({
  imports: [ExecutionsModule],
  controllers: [LiveController],
  providers: [
    LiveSettings,
    LiveFeed,
    LiveStreams,
    { provide: RetentionHorizon, inject: [EVENT_STORE], useFactory: (store: EventStore) => new RetentionHorizon(store) },
  ],
  exports: [LiveSettings, LiveStreams],
})
export class LiveModule {}
