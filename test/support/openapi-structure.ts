import type { oas31 } from 'zod-openapi';

/**
 * The essentials of a valid OpenAPI 3.1 document, checked without a validator (none is
 * installed): version and info, unique operationIds, responses on every operation with at
 * least one success, path templates matching their path parameters, declared tags and security
 * schemes, parameters unique per location, every `$ref` resolving, and no unused schema.
 * Returns what is wrong, one line each.
 */
export function structuralProblems(document: oas31.OpenAPIObject): string[] {
  const problems: string[] = [];
  if (document.openapi !== '3.1.0') problems.push(`openapi is ${document.openapi}, not 3.1.0`);
  if (!document.info?.title || !document.info?.version) problems.push('info needs a title and a version');
  const tags = new Set((document.tags ?? []).map((tag) => tag.name));
  const schemes = new Set(Object.keys(document.components?.securitySchemes ?? {}));
  const operationIds = new Map<string, string>();
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    if (!path.startsWith('/')) problems.push(`${path}: a path starts with /`);
    const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]).sort();
    for (const [method, value] of Object.entries(item as Record<string, unknown>)) {
      const operation = value as oas31.OperationObject;
      const where = `${method.toUpperCase()} ${path}`;
      if (!['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'].includes(method))
        problems.push(`${where}: not an HTTP method`);
      if (!operation.operationId) problems.push(`${where}: no operationId`);
      else if (operationIds.has(operation.operationId))
        problems.push(`${where}: operationId ${operation.operationId} is also ${operationIds.get(operation.operationId)}`);
      else operationIds.set(operation.operationId, where);
      const statuses = Object.keys(operation.responses ?? {});
      if (statuses.length === 0) problems.push(`${where}: no responses`);
      if (!statuses.some((status) => /^2\d\d$/.test(status))) problems.push(`${where}: no success response`);
      for (const status of statuses) {
        if (!/^[1-5](\d\d|XX)$/.test(status) && status !== 'default') problems.push(`${where}: response key ${status} is not a status`);
        const response = operation.responses![status] as oas31.ResponseObject;
        if (typeof response.description !== 'string') problems.push(`${where} ${status}: a response needs a description`);
      }
      const parameters = (operation.parameters ?? []) as oas31.ParameterObject[];
      const seen = new Set<string>();
      for (const parameter of parameters) {
        const key = `${parameter.in}:${parameter.in === 'header' ? parameter.name.toLowerCase() : parameter.name}`;
        if (seen.has(key)) problems.push(`${where}: parameter ${key} twice`);
        seen.add(key);
        if (parameter.in === 'path' && parameter.required !== true)
          problems.push(`${where}: path parameter ${parameter.name} must be required`);
        if (parameter.schema === undefined && parameter.content === undefined)
          problems.push(`${where}: parameter ${parameter.name} has no schema`);
      }
      const pathParameters = parameters
        .filter((parameter) => parameter.in === 'path')
        .map((parameter) => parameter.name)
        .sort();
      if (JSON.stringify(pathParameters) !== JSON.stringify(templated)) {
        problems.push(
          `${where}: path parameters ${pathParameters.join(',') || '(none)'} do not match the template's ${templated.join(',') || '(none)'}`,
        );
      }
      const body = operation.requestBody as oas31.RequestBodyObject | undefined;
      if (body !== undefined && Object.keys(body.content ?? {}).length === 0) problems.push(`${where}: a request body needs content`);
      for (const tag of operation.tags ?? []) if (!tags.has(tag)) problems.push(`${where}: tag ${tag} is not declared`);
      for (const requirement of operation.security ?? []) {
        for (const scheme of Object.keys(requirement))
          if (!schemes.has(scheme)) problems.push(`${where}: security scheme ${scheme} is not declared`);
      }
    }
  }
  const refs = new Set<string>();
  collectRefs(document, refs);
  for (const ref of refs) if (resolve(document, ref) === undefined) problems.push(`$ref ${ref} does not resolve`);
  for (const name of Object.keys(document.components?.schemas ?? {})) {
    if (!refs.has(`#/components/schemas/${name}`)) problems.push(`schema ${name} is not used`);
  }
  return problems;
}

function collectRefs(value: unknown, refs: Set<string>): void {
  if (Array.isArray(value)) for (const item of value) collectRefs(item, refs);
  else if (typeof value === 'object' && value !== null) {
    for (const [key, child] of Object.entries(value)) {
      if (key === '$ref' && typeof child === 'string') refs.add(child);
      else collectRefs(child, refs);
    }
  }
}

/** A local JSON pointer (`#/components/schemas/Problem`), or undefined when nothing is there. */
function resolve(document: unknown, ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined;
  let at: unknown = document;
  for (const raw of ref.slice(2).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (typeof at !== 'object' || at === null || !(key in at)) return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at;
}
