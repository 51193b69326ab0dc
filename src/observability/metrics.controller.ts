import { Controller, Get, Header, Inject } from '@nestjs/common';
import { ForbiddenError } from '../auth/auth.errors.js';
import { CurrentPrincipal } from '../auth/current-principal.decorator.js';
import type { Principal } from '../auth/principal.js';
import { Public } from '../auth/public.decorator.js';
import { METRICS, type Metrics } from '../core/metrics.port.js';
import { ApiRoute } from '../http/openapi/route-contract.js';
import { METRICS_CONTENT_TYPE, metricsContract, tokenMetricsContract } from './metrics.contract.js';
import { scrapeOf } from './metrics-exposition.js';

/**
 * `GET /metrics` on the process's HTTP server for anyone who reaches it (FLOSTRA_METRICS_AUTH=none,
 * and no FLOSTRA_METRICS_PORT giving it a listener of its own).
 */
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

/**
 * `GET /metrics` on the process's HTTP server with FLOSTRA_METRICS_AUTH=token. Promise 13
 * (docs/architecture.md): the series name workspaces, so on the port every tenant reaches only a
 * token with the global `metrics` role (a scraper's, which may do nothing else) or
 * `system-admin` reads them.
 */
@Controller()
export class TokenMetricsController {
  constructor(@Inject(METRICS) private readonly metrics: Metrics) {}

  @ApiRoute(tokenMetricsContract)
  @Get('metrics')
  @Header('Content-Type', METRICS_CONTENT_TYPE)
  @Header('Cache-Control', 'no-store')
  scrape(@CurrentPrincipal() principal: Principal): Promise<string> {
    if (!principal.global.has('metrics') && !principal.global.has('system-admin')) {
      throw new ForbiddenError('reading metrics requires the global metrics or system-admin role', { requiredRole: 'metrics' });
    }
    return scrapeOf(this.metrics);
  }
}
