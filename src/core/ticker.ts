import { setTimeout as sleep } from 'node:timers/promises';

export interface TickerOptions {
  tickMs: number;
  /** One round of work; resolves true when more is waiting and the next round should start at once. */
  tick: () => Promise<boolean>;
  /** A failed round: the ticker backs off (doubling, at most 5 s) and tries again. */
  onError: (error: unknown, failures: number) => void;
}

/** Runs `tick` every `tickMs` until `signal` aborts; failures back off, never stop the loop. */
export async function runTicker(signal: AbortSignal, options: TickerOptions): Promise<void> {
  let failures = 0;
  while (!signal.aborted) {
    let again = false;
    try {
      again = await options.tick();
      failures = 0;
    } catch (error) {
      failures += 1;
      options.onError(error, failures);
    }
    if (again && !signal.aborted) continue;
    const waitMs = failures === 0 ? options.tickMs : Math.min(5_000, options.tickMs * 2 ** failures);
    await sleep(waitMs, undefined, { signal }).catch(() => undefined);
  }
}
