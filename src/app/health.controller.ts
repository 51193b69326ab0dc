import { Controller, Get, Inject, Res } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import { Public } from '../auth/public.decorator.js';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { BUS, type Bus } from '../core/bus.port.js';
import { EVENT_STORE, type EventStore } from '../core/event-store.port.js';
import { ApiRoute } from '../http/openapi/route-contract.js';
import { READ_MODEL_SQL, type SqlClient } from '../postgres/sql-client.port.js';
import { liveContract, readyContract } from './health.contract.js';
import { kafkaTopicOf, Readiness } from './readiness.js';

@Public()
@Controller('health')
export class HealthController {
  private readonly readiness: Readiness;

  constructor(
    @Inject(EVENT_STORE) store: EventStore,
    @Inject(READ_MODEL_SQL) readModelSql: SqlClient,
    @Inject(BUS) bus: Bus,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.readiness = new Readiness({ store, readModelSql, bus, kafkaTopic: kafkaTopicOf(config.roles) });
  }

  @ApiRoute(liveContract)
  @Get('live')
  live() {
    return { status: 'ok' };
  }

  /** Ready only when every dependency of this process's roles answers; 503 names the ones that do not. */
  @ApiRoute(readyContract)
  @Get('ready')
  async ready(@Res({ passthrough: true }) response: ServerResponse) {
    const checks = await this.readiness.check();
    const up = Object.values(checks).every((result) => result === 'up');
    response.statusCode = up ? 200 : 503;
    response.setHeader('Cache-Control', 'no-store');
    return { status: up ? 'ok' : 'unavailable', checks };
  }
}
