import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { TokenRegistry } from '../auth/token-registry.js';
import { NestLoggerAdapter } from '../core/logger.js';
import { configureHttp } from '../http/configure-http.js';
import { AppModule } from './app.module.js';
import type { CoreDependencies } from './core.module.js';

/** Builds the HTTP application over already-open ports; `listen` is the caller's. */
export async function createApp(deps: CoreDependencies & { registry: TokenRegistry }): Promise<NestExpressApplication> {
  const app = await NestFactory.create<NestExpressApplication>(AppModule.register(deps), {
    bodyParser: false,
    logger: new NestLoggerAdapter(deps.logger.child({ component: 'nest' })),
    abortOnError: false,
  });
  configureHttp(app, deps.config, deps.logger);
  return app;
}
