import type { HttpConfig } from '../../workflows/domain/node-config.schema.js';
import { hasSecretReference, scanSecretReferences, substituteSecretReferences } from '../../workflows/domain/secret-references.js';
import { NodeError } from '../dag/node-error.js';

/** An http node's call with its secret references replaced by values: made at call time, never stored or reported. */
export interface HttpCallWithSecrets {
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly body: unknown;
  /** Headers whose configured value referenced a secret: dropped on a redirect to another origin. */
  readonly secretHeaders: string[];
  /** The body referenced a secret: never resent to another origin. */
  readonly secretBody: boolean;
}

/**
 * A value as one URL component, in RFC 3986's strict form: `encodeURIComponent` with `!'()*`
 * escaped as well. The URL parser escapes `'` in a query of its own accord; a form it leaves as
 * it is reaches the server, and its echo, exactly as the redactor expects it.
 */
export function encodeUrlComponent(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`);
}

/**
 * Puts the values in: percent-encoded in the url (a value is one URL component), as they are in
 * header values and body strings. A value that cannot stand in a header (CR, LF, NUL) fails the
 * node without retry; the message names the header and the secret, never the value.
 */
export function substituteHttpSecrets(config: HttpConfig, values: ReadonlyMap<string, string>): HttpCallWithSecrets {
  const valueOf = (name: string): string => {
    const value = values.get(name);
    if (value === undefined) throw new NodeError('secret_not_found', `the secret ${name} was not resolved`, false);
    return value;
  };
  const url = substituteSecretReferences(config.url, (name) => encodeUrlComponent(valueOf(name)));
  const headers: Record<string, string> = {};
  const secretHeaders: string[] = [];
  for (const [header, configured] of Object.entries(config.headers ?? {})) {
    const names = scanSecretReferences(configured).names;
    if (names.length === 0) {
      headers[header] = configured;
      continue;
    }
    const value = substituteSecretReferences(configured, valueOf);
    if (/[\r\n\0]/.test(value)) {
      throw new NodeError(
        'secret_invalid',
        `the header ${header} cannot carry the secret ${names.join(', ')}: its value holds CR, LF or NUL`,
        false,
      );
    }
    headers[header] = value;
    secretHeaders.push(header);
  }
  let secretBody = false;
  const body =
    config.body === undefined
      ? undefined
      : mapStrings(config.body, (text) => {
          if (!hasSecretReference(text)) return text;
          secretBody = true;
          return substituteSecretReferences(text, valueOf);
        });
  return { url, headers, body, secretHeaders, secretBody };
}

function mapStrings(value: unknown, map: (text: string) => string): unknown {
  if (typeof value === 'string') return map(value);
  if (Array.isArray(value)) return value.map((item) => mapStrings(item, map));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, mapStrings(item, map)]));
  }
  return value;
}
