import { describe, expect, it } from '@jest/globals';
import { canonicalJson, sha256OfCanonical } from './canonical-json.js';

describe('canonical JSON', () => {
  it('serializes objects that differ only in key order identically', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: null } })).toBe(
      canonicalJson({ a: { c: null, d: [1, { y: 2, z: 1 }] }, b: 1 }),
    );
  });

  it('keeps array order significant', () => {
    expect(sha256OfCanonical([1, 2])).not.toBe(sha256OfCanonical([2, 1]));
  });

  it('drops undefined properties as JSON does', () => {
    expect(canonicalJson({ a: undefined, b: 1 })).toBe('{"b":1}');
  });
});

describe('canonical JSON of hostile keys', () => {
  it('keeps a key named __proto__ as data', () => {
    expect(canonicalJson(JSON.parse('{"__proto__":{"x":1},"a":2}'))).toBe('{"__proto__":{"x":1},"a":2}');
  });
});
