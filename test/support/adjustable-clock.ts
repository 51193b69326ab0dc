import type { Clock } from '../../src/core/clock.port.js';

/** The real clock shifted by an offset a test moves forward: expires leases without waiting. */
export class AdjustableClock implements Clock {
  private offsetMs = 0;

  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }

  advance(ms: number): void {
    this.offsetMs += ms;
  }
}
