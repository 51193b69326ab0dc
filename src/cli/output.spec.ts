import { describe, expect, it } from '@jest/globals';
import { describeEvent, eventLine } from './events.js';
import { compact, fields, table, when } from './output.js';

describe('output formatting', () => {
  it('aligns a table on its widest cells, header first, without trailing spaces', () => {
    const rows = [
      { id: 'a', status: 'succeeded', note: 'x' },
      { id: 'longer-id', status: 'failed', note: '' },
    ];
    const text = table(rows, [
      { header: 'ID', value: (r) => r.id },
      { header: 'STATUS', value: (r) => r.status },
      { header: 'NOTE', value: (r) => r.note },
    ]);
    expect(text).toBe(['ID         STATUS     NOTE', 'a          succeeded  x', 'longer-id  failed'].join('\n') + '\n');
  });

  it('keeps every table row on one line', () => {
    const text = table([{ v: 'two\nlines' }], [{ header: 'V', value: (r) => r.v }]);
    expect(text.split('\n')).toEqual(['V', 'two lines', '']);
  });

  it('writes times in UTC to the second, and "-" for none', () => {
    expect(when('2026-12-01T09:08:07.654Z')).toBe('2026-12-01 09:08:07');
    expect(when(null)).toBe('-');
  });

  it('cuts long JSON to one bounded line', () => {
    expect(compact({ a: 1 })).toBe('{"a":1}');
    const long = compact({ text: 'x'.repeat(500) }, 40);
    expect(long).toHaveLength(40);
    expect(long.endsWith('…')).toBe(true);
  });

  it('aligns key: value fields', () => {
    expect(
      fields([
        ['id', '1'],
        ['status', 'ok'],
      ]),
    ).toBe('id:     1\nstatus: ok\n');
  });

  it("tells a node's start and end and an execution's end in words, with the event's time", () => {
    const at = '2026-12-01T10:00:01.000Z';
    expect(eventLine({ type: 'NodeStarted', data: { nodeId: 'greet' }, recordedAt: at })).toBe('10:00:01  node greet started\n');
    expect(describeEvent({ type: 'NodeFailed', data: { nodeId: 'b', error: { code: 'nope', message: 'it broke' } } })).toBe(
      'node b failed: nope: it broke',
    );
    expect(describeEvent({ type: 'ExecutionSucceeded', data: { output: { shout: 'HI' } } })).toBe('execution succeeded: {"shout":"HI"}');
  });

  it('says nothing of lease extensions while watching', () => {
    expect(eventLine({ type: 'LeaseExtended', data: {}, recordedAt: '2026-12-01T10:00:01.000Z' })).toBeNull();
  });
});
