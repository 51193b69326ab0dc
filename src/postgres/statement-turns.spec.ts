import { afterEach, describe, expect, it } from '@jest/globals';
import { StatementTurns } from './statement-turns.js';
import { isUrgent, urgently, urgentWorkUnderWay, withUrgency } from './urgent-work.js';

/** Time moved by hand, and urgent work switched on and off by hand. */
function manualSetting() {
  let nowMs = 0;
  const timers: { atMs: number; run: () => void }[] = [];
  let underWay = false;
  const done = new Set<() => void>();
  return {
    time: {
      now: () => nowMs,
      schedule: (run: () => void, ms: number) => {
        const timer = { atMs: nowMs + ms, run };
        timers.push(timer);
        return () => void timers.splice(timers.indexOf(timer), 1);
      },
    },
    urgentWork: {
      underWay: () => underWay,
      onDone: (listener: () => void) => {
        done.add(listener);
        return () => void done.delete(listener);
      },
    },
    advance(ms: number) {
      nowMs += ms;
      for (const timer of timers.filter((t) => t.atMs <= nowMs)) {
        timers.splice(timers.indexOf(timer), 1);
        timer.run();
      }
    },
    setUnderWay(value: boolean) {
      underWay = value;
      if (!value) for (const listener of done) listener();
    },
  };
}

/** A statement whose end the test decides; `order` records the statements as they start. */
function statements(order: string[]) {
  const ends = new Map<string, () => void>();
  return {
    statement: (name: string) => () =>
      new Promise<string>((resolve) => {
        order.push(name);
        ends.set(name, () => resolve(name));
      }),
    end: (name: string) => ends.get(name)?.(),
  };
}

const turnsMade: StatementTurns[] = [];
const settled = () => new Promise((resolve) => setImmediate(resolve));

/** Turns with a maximum hold of 500 ms, in a setting moved by hand, and statements ended by hand. */
function turnsByHand() {
  const setting = manualSetting();
  const order: string[] = [];
  const turns = new StatementTurns({ maxHoldMs: 500, ...setting });
  turnsMade.push(turns);
  return { setting, turns, order, ...statements(order) };
}

afterEach(() => turnsMade.splice(0).forEach((turns) => turns.close()));

describe('statement turns', () => {
  it('runs one statement at a time, in arrival order, when nothing is urgent', async () => {
    const { turns, order, statement, end } = turnsByHand();
    const results = [turns.run(false, statement('a')), turns.run(false, statement('b')), turns.run(false, statement('c'))];
    expect(order).toEqual(['a']);
    end('a');
    await settled();
    expect(order).toEqual(['a', 'b']);
    end('b');
    await settled();
    end('c');
    await expect(Promise.all(results)).resolves.toEqual(['a', 'b', 'c']);
  });

  it('runs a queued urgent statement before the normal ones queued before it', async () => {
    const { turns, order, statement, end } = turnsByHand();
    const running = turns.run(false, statement('running'));
    const normal = turns.run(false, statement('normal'));
    const urgent = turns.run(true, statement('urgent'));
    end('running');
    await settled();
    expect(order).toEqual(['running', 'urgent']);
    end('urgent');
    await settled();
    end('normal');
    await Promise.all([running, normal, urgent]);
    expect(order).toEqual(['running', 'urgent', 'normal']);
  });

  it('holds normal statements while urgent work is under way, until it ends', async () => {
    const { setting, turns, order, statement, end } = turnsByHand();
    setting.setUnderWay(true);
    const normal = turns.run(false, statement('normal'));
    await settled();
    expect(order).toEqual([]);
    setting.setUnderWay(false);
    await settled();
    expect(order).toEqual(['normal']);
    end('normal');
    await expect(normal).resolves.toBe('normal');
  });

  it('lets a held statement go once it has waited maxHoldMs, ahead of urgent ones: nothing starves', async () => {
    const { setting, turns, order, statement, end } = turnsByHand();
    setting.setUnderWay(true);
    const running = turns.run(true, statement('urgent 1'));
    const normal = turns.run(false, statement('normal'));
    setting.advance(499);
    const urgent = turns.run(true, statement('urgent 2'));
    end('urgent 1');
    await settled();
    expect(order).toEqual(['urgent 1', 'urgent 2']);
    setting.advance(1);
    const late = turns.run(true, statement('urgent 3'));
    end('urgent 2');
    await settled();
    // Held 500 ms: it goes before the urgent statement queued meanwhile.
    expect(order).toEqual(['urgent 1', 'urgent 2', 'normal']);
    end('normal');
    await settled();
    end('urgent 3');
    await Promise.all([running, normal, urgent, late]);
  });

  it('lets a held statement go when its hold runs out while the database is idle', async () => {
    const { setting, turns, order, statement, end } = turnsByHand();
    setting.setUnderWay(true);
    const normal = turns.run(false, statement('normal'));
    setting.advance(499);
    await settled();
    expect(order).toEqual([]);
    setting.advance(1);
    await settled();
    expect(order).toEqual(['normal']);
    end('normal');
    await expect(normal).resolves.toBe('normal');
  });

  it('goes on after a statement fails', async () => {
    const { turns } = turnsByHand();
    const failing = turns.run(false, () => Promise.reject(new Error('refused')));
    const thrown = turns.run(false, () => {
      throw new Error('thrown');
    });
    await expect(failing).rejects.toThrow('refused');
    await expect(thrown).rejects.toThrow('thrown');
    await expect(turns.run(false, () => Promise.resolve('next'))).resolves.toBe('next');
  });
});

describe('urgent work', () => {
  it('marks the work and what it awaits, and is under way until it settles', async () => {
    expect(isUrgent()).toBe(false);
    let release: () => void = () => undefined;
    const work = urgently(async () => {
      await new Promise<void>((resolve) => (release = resolve));
      return [isUrgent(), withUrgency(false, isUrgent)];
    });
    expect(urgentWorkUnderWay()).toBe(true);
    release();
    await expect(work).resolves.toEqual([true, false]);
    expect(urgentWorkUnderWay()).toBe(false);
    expect(isUrgent()).toBe(false);
  });
});
