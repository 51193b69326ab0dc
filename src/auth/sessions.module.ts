import { Module } from '@nestjs/common';
import { GetMeHandler } from './get-me.handler.js';
import { SessionsController } from './sessions.controller.js';

/** Browser sign-in and `GET /v1/me` (api role); the SessionStore itself comes from the global AuthModule. */
@Module({
  controllers: [SessionsController],
  providers: [GetMeHandler],
})
export class SessionsModule {}
