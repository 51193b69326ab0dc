import { RequestMethod, type Type } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants.js';
import { contractOf, type RouteContract } from './route-contract.js';

/** One route as Nest registers it from a controller's metadata, with the contract attached to it. */
export interface DiscoveredRoute {
  /** Lower case, as OpenAPI names operations: `get`, `post`, … */
  method: string;
  /** As Express matches it: `/v1/executions/:executionId`. */
  path: string;
  /** `ExecutionsController.get`: where to add a missing contract. */
  handler: string;
  contract: RouteContract | undefined;
}

function pathsOf(metadata: unknown): string[] {
  if (metadata === undefined) return [''];
  return Array.isArray(metadata) ? metadata.map(String) : [String(metadata)];
}

/** `v1` + `executions/:id` → `/v1/executions/:id`, the way Nest joins a controller's and a method's paths. */
export function joinRoutePath(...parts: string[]): string {
  const joined = `/${parts.join('/')}`.replace(/\/{2,}/g, '/');
  return joined.length > 1 ? joined.replace(/\/$/, '') : joined;
}

/** Every route the given controllers declare (Nest's PATH_METADATA / METHOD_METADATA), in declaration order. */
export function discoverRoutes(controllers: readonly Type[]): DiscoveredRoute[] {
  const routes: DiscoveredRoute[] = [];
  for (const controller of controllers) {
    const prefixes = pathsOf(Reflect.getMetadata(PATH_METADATA, controller));
    for (const name of methodNames(controller.prototype)) {
      const handler = (controller.prototype as Record<string, unknown>)[name];
      if (typeof handler !== 'function') continue;
      const requestMethod = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
      const methodPaths = Reflect.getMetadata(PATH_METADATA, handler) as unknown;
      if (requestMethod === undefined || methodPaths === undefined) continue;
      for (const prefix of prefixes) {
        for (const path of pathsOf(methodPaths)) {
          routes.push({
            method: RequestMethod[requestMethod].toLowerCase(),
            path: joinRoutePath(prefix, path),
            handler: `${controller.name}.${name}`,
            contract: contractOf(handler),
          });
        }
      }
    }
  }
  return routes;
}

function methodNames(prototype: object): string[] {
  const names = new Set<string>();
  for (let at = prototype; at !== null && at !== Object.prototype; at = Object.getPrototypeOf(at) as object) {
    for (const name of Object.getOwnPropertyNames(at)) if (name !== 'constructor') names.add(name);
  }
  return [...names];
}

/** `/v1/executions/:executionId` → `/v1/executions/{executionId}`. */
export function toOpenApiPath(path: string): string {
  return path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}
