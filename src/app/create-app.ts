import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { NestLoggerAdapter } from '../core/logger.js';
import { configureHttp } from '../http/configure-http.js';
import { AppModule, type AppDependencies } from './app.module.js';

/** Builds the HTTP application over already-open ports; `listen` is the caller's. */
export async function createApp(deps: AppDependencies): Promise<NestExpressApplication> {
  const app = await NestFactory.create<NestExpressApplication>(AppModule.register(deps), {
    bodyParser: false,
    logger: new NestLoggerAdapter(deps.logger.child({ component: 'nest' })),
    abortOnError: false,
  });
  configureHttp(app, deps.config, deps.logger);
  return app;
}
