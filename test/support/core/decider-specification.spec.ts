import { describe, expect, it } from '@jest/globals';
import type { Decider } from '../../../src/core/decider.js';
import { InvalidStateError, NotFoundError } from '../../../src/core/errors.js';
import { deciderSpecification } from './decider-specification.js';

// A counter that refuses to go above its limit: the smallest decider with a rule and a no-op.
type Command = { type: 'Add'; data: { amount: number } };
type Event = { type: 'Added'; data: { amount: number } };
type State = { total: number };
const counter: Decider<Command, Event, State> = {
  initialState: () => ({ total: 0 }),
  evolve: (state, event) => ({ total: state.total + event.data.amount }),
  decide: (command, state) => {
    if (state.total + command.data.amount > 10) throw new InvalidStateError('over the limit', { total: state.total });
    return command.data.amount === 0 ? [] : [{ type: 'Added', data: { amount: command.data.amount } }];
  },
};
const add = (amount: number): Command => ({ type: 'Add', data: { amount } });
const added = (amount: number): Event => ({ type: 'Added', data: { amount } });
const spec = deciderSpecification(counter);

describe('decider specifications', () => {
  it('pass when the decider produces the expected events', () => {
    spec
      .given([added(4)])
      .when(add(5))
      .then([added(5)]);
  });

  it('fail, with a diff, when it produces other events', () => {
    expect(() =>
      spec
        .given([])
        .when(add(5))
        .then([added(6)]),
    ).toThrow(/deepStrictEqual|Expected values to be strictly deep-equal/);
  });

  it('check that nothing happens', () => {
    spec
      .given([added(4)])
      .when(add(0))
      .thenNothingHappens();
    expect(() => spec.given([]).when(add(1)).thenNothingHappens()).toThrow();
  });

  it('check the state after the new events', () => {
    spec
      .given([added(4)])
      .when(add(5))
      .thenState({ total: 9 });
  });

  it('check a rejection by error class or by code, and let the error be inspected', () => {
    spec
      .given([added(8)])
      .when(add(5))
      .thenThrows(InvalidStateError);
    spec
      .given([added(8)])
      .when(add(5))
      .thenThrows<InvalidStateError>('invalid_state', (error) => {
        expect(error.details).toEqual({ total: 8 });
      });
  });

  it('fail when the rejection is another one, or when there is none', () => {
    expect(() =>
      spec
        .given([added(8)])
        .when(add(5))
        .thenThrows(NotFoundError),
    ).toThrow('expected NotFoundError');
    expect(() =>
      spec
        .given([added(8)])
        .when(add(5))
        .thenThrows('not_found'),
    ).toThrow('expected code "not_found"');
    expect(() => spec.given([]).when(add(5)).thenThrows(InvalidStateError)).toThrow('but it produced');
  });
});
