import { describe, expect, it } from '@jest/globals';
import { createLogger } from '../../core/logger.js';
import { encodeUrlComponent } from './http-secrets.js';
import { redactableForms, redactingLogger, SecretRedactor } from './secret-redactor.js';

const CANARY = 'c4n4ry-0123456789abcdef';

function redactorOf(values: Record<string, string>): SecretRedactor {
  const redactor = new SecretRedactor();
  redactor.add(new Map(Object.entries(values)));
  return redactor;
}

describe('the secret redactor', () => {
  const redactor = redactorOf({ TOKEN: CANARY });

  it('changes nothing before any value is known', () => {
    const idle = new SecretRedactor();
    const value = { a: [CANARY] };
    expect(idle.active).toBe(false);
    expect(idle.value(value)).toBe(value);
    expect(idle.text(CANARY)).toBe(CANARY);
  });

  it.each([
    ['as written', CANARY],
    ['in base64', Buffer.from(CANARY).toString('base64')],
    ['in base64 without padding', Buffer.from(CANARY).toString('base64').replace(/=+$/, '')],
    ['in base64url', Buffer.from(CANARY).toString('base64url')],
  ])('replaces the value %s', (_form, text) => {
    expect(redactor.text(`before ${text} after`)).toBe('before [redacted:TOKEN] after');
  });

  it('replaces the URL-encoded value, with %20 or + for spaces', () => {
    const spaced = redactorOf({ T: `${CANARY}/+ &` });
    expect(spaced.text(`a=${encodeURIComponent(`${CANARY}/+ &`)}`)).toBe('a=[redacted:T]');
    expect(spaced.text(`a=${encodeURIComponent(`${CANARY}/+ &`).replace('%20', '+')}`)).toBe('a=[redacted:T]');
  });

  it('replaces URL encoding with lower-case hex and JSON escaping', () => {
    const tricky = redactorOf({ T: 'p"ss\\word/x' });
    expect(tricky.text('q=p%22ss%5cword%2fx')).toBe('q=[redacted:T]');
    expect(tricky.text(JSON.stringify({ v: 'p"ss\\word/x' }))).toBe('{"v":"[redacted:T]"}');
  });

  it.each([0, 1, 2, 3, 4, 5])('finds the value inside a longer base64 text, %i bytes in', (offset) => {
    const body = Buffer.from(`${'x'.repeat(offset)}{"token":"${CANARY}","more":"text after it"}`).toString('base64');
    const redacted = redactor.text(body);
    expect(redacted).toContain('[redacted:TOKEN]');
    // What is left around the marker is a few characters of the value's edges, never the rest of it.
    const left = redacted.replace('[redacted:TOKEN]', '');
    for (let at = 0; at + 8 <= CANARY.length; at++)
      expect(Buffer.from(left, 'base64').toString('latin1')).not.toContain(CANARY.slice(at, at + 8));
  });

  it.each([0, 1, 2])('finds a 7-byte value inside a longer base64 text, %i bytes into a 3-byte group', (offset) => {
    const short = redactorOf({ PASS: 'hunter2' });
    const body = Buffer.from(`${'x'.repeat(offset)}user:hunter2 and more text`).toString('base64');
    expect(short.text(body)).toContain('[redacted:PASS]');
  });

  it('replaces the value URL-encoded as encodeURI leaves it, with / ? & = kept', () => {
    const path = redactorOf({ T: `${CANARY}/a?b&c=d e` });
    expect(path.text(`https://example.test/${encodeURI(`${CANARY}/a?b&c=d e`)}`)).toBe('https://example.test/[redacted:T]');
  });

  it("replaces the value form-encoded, and in a url as the worker puts it, where ! ' ( ) are escaped too", () => {
    const value = "p!ss'(w)~rd* x";
    const form = redactorOf({ T: value });
    expect(form.text(`a=${new URLSearchParams({ v: value }).toString().slice(2)}&b=1`)).toBe('a=[redacted:T]&b=1');
    expect(form.text(new URL(`https://example.test/?a=${encodeUrlComponent(value)}`).search)).toBe('?a=[redacted:T]');
  });

  it.each([
    ['quotes as named entities', 'p&lt;a&gt;ss&amp;&quot;w&#39;rd'],
    ['quotes as decimal entities', 'p&lt;a&gt;ss&amp;&#34;w&#39;rd'],
    ['quotes as hex entities', 'p&lt;a&gt;ss&amp;&#x22;w&#x27;rd'],
    ['quotes left as they are', 'p&lt;a&gt;ss&amp;"w\'rd'],
  ])('replaces the HTML-escaped value, %s', (_variant, escaped) => {
    const html = redactorOf({ T: `p<a>ss&"w'rd` });
    expect(html.text(`<p>${escaped}</p>`)).toBe('<p>[redacted:T]</p>');
  });

  it('replaces the value in hex, either case, and JSON-escaped with \\u escapes', () => {
    const accented = redactorOf({ T: 'pässwörd' });
    const hex = Buffer.from('pässwörd').toString('hex');
    expect(accented.text(`${hex} ${hex.toUpperCase()}`)).toBe('[redacted:T] [redacted:T]');
    expect(accented.text('{"v":"p\\u00e4ssw\\u00f6rd"}')).toBe('{"v":"[redacted:T]"}');
  });

  it('redacts every string and key of a JSON value, leaving the rest as it is', () => {
    expect(redactor.value({ status: 500, body: { echo: [`Bearer ${CANARY}`], [CANARY]: true }, n: null })).toEqual({
      status: 500,
      body: { echo: ['Bearer [redacted:TOKEN]'], '[redacted:TOKEN]': true },
      n: null,
    });
  });

  it('replaces a longer value whole before a shorter one inside it', () => {
    const both = redactorOf({ LONG: `${CANARY}-suffix`, SHORT: CANARY });
    expect(both.text(`${CANARY}-suffix and ${CANARY}`)).toBe('[redacted:LONG] and [redacted:SHORT]');
  });

  it('redacts short values as written only', () => {
    const short = redactorOf({ PIN: 'abc' });
    expect(redactableForms('abc')).toEqual(['abc']);
    expect(short.text('abc YWJj')).toBe('[redacted:PIN] YWJj');
  });

  it('treats values with regular-expression and replacement characters literally', () => {
    const odd = redactorOf({ ODD: 'a.b*c$&(d)' });
    expect(odd.text('a.b*c$&(d) axbbc')).toBe('[redacted:ODD] axbbc');
  });
});

describe('the redacting logger', () => {
  it('redacts messages, fields, bound fields and errors, also for values resolved after the child was made', () => {
    const lines: string[] = [];
    const redactor = new SecretRedactor();
    const log = redactingLogger(createLogger({ level: 'debug', write: (line) => lines.push(line) }), redactor).child({
      bound: `early ${CANARY}`,
    });
    redactor.add(new Map([['TOKEN', CANARY]]));
    log.warn(`failed with ${CANARY}`, { error: new Error(`upstream said ${CANARY}`), nested: { [CANARY]: [CANARY] } });
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain(CANARY);
    expect(JSON.parse(lines[0])).toMatchObject({
      msg: 'failed with [redacted:TOKEN]',
      bound: 'early [redacted:TOKEN]',
      error: { message: 'upstream said [redacted:TOKEN]' },
      nested: { '[redacted:TOKEN]': ['[redacted:TOKEN]'] },
    });
  });
});
