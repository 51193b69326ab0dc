import { Controller, Get, Inject } from '@nestjs/common';
import { Public } from '../../auth/public.decorator.js';
import { openApiDocumentContract } from './openapi.contract.js';
import { OpenApiDocuments } from './openapi-documents.js';
import { ApiRoute } from './route-contract.js';

@Public()
@Controller()
export class OpenApiController {
  constructor(@Inject(OpenApiDocuments) private readonly documents: OpenApiDocuments) {}

  @ApiRoute(openApiDocumentContract)
  @Get('openapi.json')
  document() {
    return this.documents.current();
  }
}
