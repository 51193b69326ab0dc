import { Module } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { CLOCK, type Clock } from '../core/clock.port.js';
import { GetMeHandler } from './get-me.handler.js';
import { SessionsController } from './sessions.controller.js';
import { SIGN_IN_LIMITER, SignInLimiter } from './sign-in-limiter.js';

/** Browser sign-in and `GET /v1/me` (api role); the SessionStore itself comes from the global AuthModule. */
@Module({
  controllers: [SessionsController],
  providers: [
    GetMeHandler,
    {
      provide: SIGN_IN_LIMITER,
      useFactory: (config: AppConfig, clock: Clock) =>
        new SignInLimiter(clock, { perAddress: config.signInPerMinutePerAddress, perToken: config.signInPerMinutePerToken }),
      inject: [APP_CONFIG, CLOCK],
    },
  ],
})
export class SessionsModule {}
