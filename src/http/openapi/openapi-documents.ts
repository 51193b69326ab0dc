import { Inject, Injectable, type Type } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { buildOpenApiDocument, type OpenApiDocument } from './document-builder.js';
import { packageVersion } from './package-version.js';
import { discoverRoutes, type DiscoveredRoute } from './route-discovery.js';

/** The OpenAPI document of this application's controllers, built once. */
@Injectable()
export class OpenApiDocuments {
  private document: OpenApiDocument | null = null;

  constructor(@Inject(DiscoveryService) private readonly discovery: DiscoveryService) {}

  /** Every route the application's controllers declare, with its contract (if any). */
  routes(): DiscoveredRoute[] {
    const controllers = this.discovery
      .getControllers()
      .map((wrapper) => wrapper.metatype)
      .filter((metatype): metatype is Type => typeof metatype === 'function');
    return discoverRoutes(controllers);
  }

  current(): OpenApiDocument {
    this.document ??= buildOpenApiDocument(this.routes(), { version: packageVersion() });
    return this.document;
  }
}
