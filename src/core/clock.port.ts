/** The one clock. Deciders never read it: handlers put `now` into command metadata. */
export interface Clock {
  now(): Date;
}

export const CLOCK = Symbol('Clock');

export const systemClock: Clock = { now: () => new Date() };
