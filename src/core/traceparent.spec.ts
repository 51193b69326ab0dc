import { describe, expect, it } from '@jest/globals';
import { traceHeadersOf, traceIdOf, traceMessageHeaders } from './traceparent.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';

describe('traceIdOf', () => {
  it('reads the trace id of a W3C traceparent', () => {
    expect(traceIdOf(`00-${TRACE_ID}-00f067aa0ba902b7-01`)).toBe(TRACE_ID);
  });

  it.each([
    ['absent', undefined],
    ['not text', 42],
    ['malformed', '00-abc-def-01'],
    ['upper case', `00-${TRACE_ID.toUpperCase()}-00f067aa0ba902b7-01`],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`],
    ['an all-zero span id', `00-${TRACE_ID}-${'0'.repeat(16)}-01`],
    ['the forbidden version ff', `ff-${TRACE_ID}-00f067aa0ba902b7-01`],
  ])('is null when the value is %s', (_, value) => {
    expect(traceIdOf(value)).toBeNull();
  });
});

describe('traceHeadersOf and traceMessageHeaders', () => {
  it('take traceparent and tracestate, and nothing else, from metadata or headers', () => {
    const carrier = { traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01`, tracestate: 'v=1', actor: 'alice', baggage: 'k=v' };
    expect(traceHeadersOf(carrier)).toEqual({ traceparent: carrier.traceparent, tracestate: 'v=1' });
    expect(traceMessageHeaders(traceHeadersOf(carrier))).toEqual({ traceparent: carrier.traceparent, tracestate: 'v=1' });
  });

  it('have nothing to carry without a traceparent', () => {
    expect(traceHeadersOf({ tracestate: 'v=1' })).toEqual({});
    expect(traceHeadersOf(undefined)).toEqual({});
    expect(traceMessageHeaders({})).toEqual({});
  });
});
