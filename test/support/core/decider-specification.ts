import assert from 'node:assert/strict';
import { type Decider, type DomainEvent, fold } from '../../../src/core/decider.js';
import { DomainError, type ErrorCode } from '../../../src/core/errors.js';

/** An error class to expect, or the stable `code` of a DomainError. */
export type ExpectedError = (abstract new (...args: any[]) => Error) | ErrorCode;

export interface DeciderThen<Event, State> {
  /** The command produces exactly these events, in order (deep strict equality). */
  then(expected: Event[]): void;
  /** The command is accepted and changes nothing (an idempotent replay, a no-op). */
  thenNothingHappens(): void;
  /** The command is rejected; `inspect` may check the error further (message, details). */
  thenThrows<E extends Error = DomainError>(expected: ExpectedError, inspect?: (error: E) => void): void;
  /** The state after folding the given events and the new ones, for assertions on evolve. */
  thenState(expected: State): void;
}

export interface DeciderSpecification<Command, Event extends DomainEvent, State> {
  given(events: Event[]): { when(command: Command): DeciderThen<Event, State> };
}

/**
 * Given/when/then specifications over a pure decider, independent of the test runner (it
 * throws node:assert errors, which jest reports with a diff).
 *
 *   const spec = deciderSpecification(workflowDecider);
 *   spec.given([published(1)]).when(publish(sameGraph)).thenNothingHappens();
 *   spec.given([]).when(publish(graph)).then([published(1)]);
 *   spec.given([]).when(cancel()).thenThrows(InvalidStateError);   // or .thenThrows('invalid_state')
 *
 * `then` and `thenNothingHappens` also fold the produced events through `evolve`, so a decider
 * that emits an event its own `evolve` cannot apply fails the specification.
 */
export function deciderSpecification<Command, Event extends DomainEvent, State>(
  decider: Decider<Command, Event, State>,
): DeciderSpecification<Command, Event, State> {
  return {
    given: (history) => ({
      when: (command) => {
        const decide = () => decider.decide(command, fold(decider, history));
        const decideAndFold = () => {
          const events = decide();
          fold(decider, [...history, ...events]);
          return events;
        };
        return {
          then: (expected) => assert.deepStrictEqual(decideAndFold(), expected),
          thenNothingHappens: () => assert.deepStrictEqual(decideAndFold(), []),
          thenState: (expected) => assert.deepStrictEqual(fold(decider, [...history, ...decide()]), expected),
          thenThrows: (expected, inspect) => {
            const before = fold(decider, history); // outside the try: a bad history is not the rejection
            let events: Event[];
            try {
              events = decider.decide(command, before);
            } catch (error) {
              assertMatches(error, expected);
              inspect?.(error as never);
              return;
            }
            assert.fail(`expected the command to be rejected (${describeExpected(expected)}), but it produced ${JSON.stringify(events)}`);
          },
        };
      },
    }),
  };
}

function assertMatches(error: unknown, expected: ExpectedError): void {
  if (typeof expected === 'string') {
    assert.ok(error instanceof DomainError, `expected a DomainError with code "${expected}", got ${String(error)}`);
    assert.equal(error.code, expected, `expected code "${expected}", got "${error.code}": ${error.message}`);
  } else {
    assert.ok(error instanceof expected, `expected ${expected.name}, got ${String(error)}`);
  }
}

function describeExpected(expected: ExpectedError): string {
  return typeof expected === 'string' ? `code "${expected}"` : expected.name;
}
