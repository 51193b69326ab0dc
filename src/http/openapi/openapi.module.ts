import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { OpenApiController } from './openapi.controller.js';
import { OpenApiDocuments } from './openapi-documents.js';

/** `GET /openapi.json`: the document of every controller of the application, public. */
@Module({
  imports: [DiscoveryModule],
  controllers: [OpenApiController],
  providers: [OpenApiDocuments],
  exports: [OpenApiDocuments],
})
export class OpenApiModule {}
