import { describe, expect, it } from '@jest/globals';
import { NodeError } from '../dag/node-error.js';
import { substituteHttpSecrets } from './http-secrets.js';

const values = new Map([
  ['KEY', 'k/ey&=?'],
  ['TOKEN', 'tok-123'],
]);

describe('putting secret values into an http call', () => {
  it('percent-encodes values in the url and puts them as they are in header values and body strings', () => {
    const call = substituteHttpSecrets(
      {
        method: 'POST',
        url: 'https://api.example.com/{{secret:TOKEN}}/x?key={{secret:KEY}}',
        headers: { Authorization: 'Bearer {{secret:TOKEN}}', 'X-Plain': 'plain', 'X-Key': '{{secret:KEY}}' },
        body: { token: '{{secret:TOKEN}}', list: ['a {{secret:KEY}} b', 3, null], keep: 'as is' },
        timeoutMs: 1000,
      },
      values,
    );
    expect(call).toEqual({
      url: 'https://api.example.com/tok-123/x?key=k%2Fey%26%3D%3F',
      headers: { Authorization: 'Bearer tok-123', 'X-Plain': 'plain', 'X-Key': 'k/ey&=?' },
      body: { token: 'tok-123', list: ['a k/ey&=? b', 3, null], keep: 'as is' },
      secretHeaders: ['Authorization', 'X-Key'],
      secretBody: true,
    });
  });

  it("escapes !'()* in the url too, so that the URL parser sends the value as it was encoded", () => {
    const call = substituteHttpSecrets(
      { method: 'GET', url: 'https://api.example.com/x?key={{secret:ODD}}', timeoutMs: 1000 },
      new Map([['ODD', "it's (ok)!*"]]),
    );
    expect(call.url).toBe('https://api.example.com/x?key=it%27s%20%28ok%29%21%2A');
    expect(new URL(call.url).href).toBe(call.url);
  });

  it('marks neither headers nor body when only the url references a secret', () => {
    const call = substituteHttpSecrets(
      { method: 'GET', url: 'https://api.example.com/?key={{secret:KEY}}', headers: { A: 'b' }, body: { a: 'b' }, timeoutMs: 1000 },
      values,
    );
    expect(call).toMatchObject({ secretHeaders: [], secretBody: false, body: { a: 'b' } });
  });

  it('refuses a value that cannot stand in a header, naming the header and the secret but not the value', () => {
    let error: unknown;
    try {
      substituteHttpSecrets(
        { method: 'GET', url: 'https://api.example.com/', headers: { 'X-Multi': '{{secret:MULTI}}' }, timeoutMs: 1000 },
        new Map([['MULTI', 'line1\r\nInjected: yes']]),
      );
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(NodeError);
    expect(error).toMatchObject({ code: 'secret_invalid', retryable: false });
    expect((error as Error).message).toContain('X-Multi');
    expect((error as Error).message).toContain('MULTI');
    expect((error as Error).message).not.toContain('line1');
  });
});
