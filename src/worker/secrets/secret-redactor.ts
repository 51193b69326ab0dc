import type { LogFields, Logger, LogLevel } from '../../core/logger.js';
import { encodeUrlComponent } from './http-secrets.js';

/** Values shorter than this are redacted as written only: their encodings would match ordinary text. */
export const MIN_ENCODED_LENGTH = 4;
/** A base64 fragment of a value inside a longer base64 text is matched only from this length on. */
const MIN_FRAGMENT_LENGTH = 8;

/**
 * The forms a value may take on its way back from a server or through a node: as written, and
 * for values of 4 characters or more its base64 (with and without padding), base64url, hex (both
 * cases), URL encoding (`encodeURIComponent`, also with `!'()*` escaped as the worker puts values
 * in urls, `encodeURI`, which keeps `/`, `?`, `&` and `=`, and form encoding, each with upper- and
 * lower-case hex, and `+` for spaces), JSON string escaping
 * (as written, and with non-ASCII characters as `\u` escapes) and HTML escaping (the entities
 * of `&`, `<`, `>` and the usual ones of both quotes). Base64 is also matched inside a longer base64
 * text (an echoed body encoded whole), at each of the three byte offsets the value may start at:
 * the characters that only the value's bytes decide are matched, from 8 characters on.
 */
export function redactableForms(value: string): string[] {
  const forms = new Set<string>([value]);
  if (value.length >= MIN_ENCODED_LENGTH) {
    const bytes = Buffer.from(value, 'utf8');
    const base64 = bytes.toString('base64');
    forms.add(base64).add(base64.replace(/=+$/, '')).add(bytes.toString('base64url'));
    for (const fragment of base64Fragments(bytes)) forms.add(fragment);
    forms.add(bytes.toString('hex')).add(bytes.toString('hex').toUpperCase());
    const component = encodeURIComponent(value);
    const formEncoded = new URLSearchParams([['', value]]).toString().slice(1);
    for (const encoded of [component, encodeUrlComponent(value), encodeURI(value), formEncoded]) {
      forms.add(encoded).add(encoded.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase()));
    }
    forms.add(component.replaceAll('%20', '+'));
    const json = JSON.stringify(value).slice(1, -1);
    forms.add(json).add(json.replace(/[\u0080-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`));
    for (const escaped of htmlEscapes(value)) forms.add(escaped);
  }
  return [...forms].filter((form) => form !== '');
}

/**
 * The value's base64 inside a longer base64 text, for each byte offset (0, 1, 2) within a
 * 3-byte group it may start at, in base64 and base64url: the characters whose bits all come
 * from the value. They are found by encoding the value between zero bytes and between 0xFF
 * bytes: a character that takes any bit from around the value differs between the two.
 */
function base64Fragments(bytes: Buffer): string[] {
  const fragments: string[] = [];
  for (let offset = 0; offset < 3; offset++) {
    const after = (3 - ((offset + bytes.length) % 3)) % 3;
    const framed = (fill: number) => Buffer.concat([Buffer.alloc(offset, fill), bytes, Buffer.alloc(after, fill)]).toString('base64');
    const zeros = framed(0x00);
    const ones = framed(0xff);
    let first = 0;
    while (first < zeros.length && zeros[first] !== ones[first]) first++;
    let last = zeros.length - 1;
    while (last >= first && zeros[last] !== ones[last]) last--;
    const fragment = zeros.slice(first, last + 1);
    if (fragment.length >= MIN_FRAGMENT_LENGTH) fragments.push(fragment, fragment.replaceAll('+', '-').replaceAll('/', '_'));
  }
  return fragments;
}

const HTML_QUOTES = ['&quot;', '&#34;', '&#x22;'];
const HTML_APOSTROPHES = ['&#39;', '&#x27;', '&apos;'];

/** The value HTML-escaped as template engines and escaping libraries write it: `&<>` always, quotes each usual way, or not at all. */
function htmlEscapes(value: string): string[] {
  const text = value.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
  const escaped = [text];
  for (const quote of HTML_QUOTES) {
    for (const apostrophe of HTML_APOSTROPHES) escaped.push(text.replaceAll('"', quote).replaceAll("'", apostrophe));
  }
  return escaped;
}

/**
 * Replaces every resolved secret value, in any of its redactable forms, by `[redacted:NAME]`
 * (docs/architecture.md, "Secrets"). One per attempt: node outputs and errors, results published
 * to the bus, the fallback complete call and the attempt's log lines all pass through it. Until
 * secrets are resolved it changes nothing.
 */
export class SecretRedactor {
  private pattern: RegExp | null = null;
  private readonly marker = new Map<string, string>();

  /** Adds resolved values (by name); a value shared by two names is marked with the first name. */
  add(values: ReadonlyMap<string, string>): void {
    for (const [name, value] of [...values].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      for (const form of redactableForms(value)) if (!this.marker.has(form)) this.marker.set(form, `[redacted:${name}]`);
    }
    // Longest first, so that a value is replaced whole rather than a shorter one inside it.
    const forms = [...this.marker.keys()].sort((a, b) => b.length - a.length);
    this.pattern = forms.length === 0 ? null : new RegExp(forms.map(escapeRegExp).join('|'), 'g');
  }

  get active(): boolean {
    return this.pattern !== null;
  }

  text(text: string): string {
    return this.pattern === null ? text : text.replace(this.pattern, (form) => this.marker.get(form)!);
  }

  /** A JSON value with every string and every object key redacted; the same value when nothing is to redact. */
  value<T>(value: T): T {
    return this.pattern === null ? value : (this.redactValue(value) as T);
  }

  /** Log fields redacted, errors included (their message and stack become plain fields). */
  fields(fields: LogFields | undefined): LogFields | undefined {
    if (fields === undefined || this.pattern === null) return fields;
    return this.redactValue(fields) as LogFields;
  }

  private redactValue(value: unknown): unknown {
    if (typeof value === 'string') return this.text(value);
    if (Array.isArray(value)) return value.map((item) => this.redactValue(item));
    if (value instanceof Error) {
      const code = (value as { code?: unknown }).code;
      return {
        name: value.name,
        message: this.text(value.message),
        ...(code !== undefined ? { code: this.redactValue(code) } : {}),
        ...(value.stack !== undefined ? { stack: this.text(value.stack) } : {}),
      };
    }
    if (typeof value === 'object' && value !== null) {
      return Object.fromEntries(Object.entries(value).map(([key, item]) => [this.text(key), this.redactValue(item)]));
    }
    return value;
  }
}

/**
 * A logger whose every line, message and fields, passes through `redactor` when it is written:
 * fields bound by `child` too, so a value resolved after the child was made is still redacted.
 */
export function redactingLogger(inner: Logger, redactor: SecretRedactor, bound: LogFields = {}): Logger {
  const write = (level: LogLevel) => (msg: string, fields?: LogFields) =>
    inner[level](redactor.text(msg), redactor.fields({ ...bound, ...fields }));
  return {
    debug: write('debug'),
    info: write('info'),
    warn: write('warn'),
    error: write('error'),
    child: (fields) => redactingLogger(inner, redactor, { ...bound, ...fields }),
    isLevelEnabled: (level) => inner.isLevelEnabled(level),
  };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}
