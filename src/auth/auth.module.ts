import { Global, Module, type DynamicModule } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { CLOCK, type Clock } from '../core/clock.port.js';
import { AuthGuard } from './auth.guard.js';
import { SESSION_STORE, SessionStore } from './session-store.js';
import { TOKEN_REGISTRY, type TokenRegistry } from './token-registry.js';

/**
 * Installs the AuthGuard on every route of the app and makes the process's TokenRegistry
 * injectable as `@Inject(TOKEN_REGISTRY)` (e.g. for SSE streams to re-check their grant), and
 * the process's browser sessions as `@Inject(SESSION_STORE)`.
 */
@Global()
@Module({})
export class AuthModule {
  static forRoot(registry: TokenRegistry): DynamicModule {
    return {
      module: AuthModule,
      providers: [
        { provide: TOKEN_REGISTRY, useValue: registry },
        {
          provide: SESSION_STORE,
          // An app without CoreModule (the HTTP shell's tests) gets the defaults and the system clock.
          useFactory: (config?: AppConfig, clock?: Clock) =>
            new SessionStore(
              registry,
              clock,
              config === undefined ? {} : { maxSessions: config.sessionsMax, maxSessionsPerSubject: config.sessionsPerSubject },
            ),
          inject: [
            { token: APP_CONFIG, optional: true },
            { token: CLOCK, optional: true },
          ],
        },
        { provide: APP_GUARD, useClass: AuthGuard },
      ],
      exports: [TOKEN_REGISTRY, SESSION_STORE],
    };
  }
}
