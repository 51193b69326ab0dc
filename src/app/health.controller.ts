import { Controller, Get, Inject } from '@nestjs/common';
import { Public } from '../auth/public.decorator.js';
import { UnavailableError } from '../core/errors.js';
import { EVENT_STORE, type EventStore } from '../core/event-store.port.js';
import { ApiRoute } from '../http/openapi/route-contract.js';
import { liveContract, readyContract } from './health.contract.js';

@Public()
@Controller('health')
export class HealthController {
  constructor(@Inject(EVENT_STORE) private readonly store: EventStore) {}

  @ApiRoute(liveContract)
  @Get('live')
  live() {
    return { status: 'ok' };
  }

  /** Ready only when every dependency answers. */
  @ApiRoute(readyContract)
  @Get('ready')
  async ready() {
    try {
      await this.store.headPosition();
    } catch {
      throw new UnavailableError('event store is not answering');
    }
    return { status: 'ok', checks: { eventStore: 'ok' } };
  }
}
