import { describe, expect, it } from '@jest/globals';
import { BoundedLabel, OTHER_LABEL_VALUE, routeLabel, statusClass } from './bounded-label.js';

describe('BoundedLabel', () => {
  it('keeps the first `limit` distinct values and counts every later one as _other', () => {
    const label = new BoundedLabel(2);
    expect(['a', 'b', 'a', 'c', 'b', 'd'].map((v) => label.of(v))).toEqual(['a', 'b', 'a', OTHER_LABEL_VALUE, 'b', OTHER_LABEL_VALUE]);
    expect(label.size).toBe(2);
  });

  it('never grows past its bound, however many values come', () => {
    const label = new BoundedLabel(100);
    const seen = new Set(Array.from({ length: 10_000 }, (_, i) => label.of(`ws-${i}`)));
    expect(seen.size).toBe(101);
    expect(label.size).toBe(100);
  });

  it('with a limit of 0 keeps none', () => {
    expect(new BoundedLabel(0).of('ws-a')).toBe(OTHER_LABEL_VALUE);
  });

  it('does not let a value named _other take a place', () => {
    const label = new BoundedLabel(1);
    expect(label.of(OTHER_LABEL_VALUE)).toBe(OTHER_LABEL_VALUE);
    expect(label.of('ws-a')).toBe('ws-a');
  });

  it('refuses a bound that is not a whole number ≥ 0', () => {
    expect(() => new BoundedLabel(-1)).toThrow(RangeError);
    expect(() => new BoundedLabel(1.5)).toThrow(RangeError);
  });
});

describe('statusClass', () => {
  it.each([
    [200, '2xx'],
    [201, '2xx'],
    [404, '4xx'],
    [503, '5xx'],
    [99, 'unknown'],
    [600, 'unknown'],
  ])('%i → %s', (status, expected) => {
    expect(statusClass(status)).toBe(expected);
  });
});

describe('routeLabel', () => {
  it('is the route template, or `unmatched` when no route took the request', () => {
    expect(routeLabel('/v1/executions/:executionId')).toBe('/v1/executions/:executionId');
    expect(routeLabel(undefined)).toBe('unmatched');
    expect(routeLabel('')).toBe('unmatched');
  });
});
