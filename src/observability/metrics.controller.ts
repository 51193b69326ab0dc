import { Controller, Get, Header, Inject } from '@nestjs/common';
import { Public } from '../auth/public.decorator.js';
import { METRICS, type Metrics } from '../core/metrics.port.js';
import { ApiRoute } from '../http/openapi/route-contract.js';
import { METRICS_CONTENT_TYPE, metricsContract } from './metrics.contract.js';
import { scrapeOf } from './metrics-exposition.js';

/** `GET /metrics` on the process's HTTP server (when FLOSTRA_METRICS_PORT does not give it a listener of its own). */
@Public()
@Controller()
export class MetricsController {
  constructor(@Inject(METRICS) private readonly metrics: Metrics) {}

  @ApiRoute(metricsContract)
  @Get('metrics')
  @Header('Content-Type', METRICS_CONTENT_TYPE)
  @Header('Cache-Control', 'no-store')
  scrape(): Promise<string> {
    return scrapeOf(this.metrics);
  }
}
