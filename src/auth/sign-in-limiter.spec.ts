import { describe, expect, it } from '@jest/globals';
import { TooManySignInsError } from './auth.errors.js';
import { SignInLimiter } from './sign-in-limiter.js';

function setup() {
  let now = 0;
  const limiter = new SignInLimiter({ now: () => new Date(now) }, { perAddress: 4, perToken: 2 });
  const refusal = (address: string, token: string): unknown => {
    try {
      limiter.admit(address, token);
      return null;
    } catch (error) {
      return error;
    }
  };
  return { limiter, refusal, advance: (ms: number) => (now += ms) };
}

describe('limiting sign-ins', () => {
  it('refuses a token beyond its rate from any address, telling when to retry', () => {
    const { refusal } = setup();
    expect(refusal('10.0.0.1', 'token-a')).toBeNull();
    expect(refusal('10.0.0.2', 'token-a')).toBeNull();
    const refused = refusal('10.0.0.3', 'token-a');
    expect(refused).toBeInstanceOf(TooManySignInsError);
    expect(refused).toMatchObject({ code: 'too_many_sign_ins', details: { scope: 'token', limit: 2, retryAfterSeconds: 30 } });
  });

  it('refuses an address beyond its rate whatever the tokens', () => {
    const { refusal } = setup();
    for (const token of ['a', 'b', 'c', 'd']) expect(refusal('10.0.0.1', token)).toBeNull();
    expect(refusal('10.0.0.1', 'e')).toMatchObject({ details: { scope: 'address', limit: 4, retryAfterSeconds: 15 } });
    expect(refusal('10.0.0.2', 'e')).toBeNull();
  });

  it('spends nothing on a refused sign-in: a refused address does not use up the token', () => {
    const { refusal, advance } = setup();
    for (const token of ['a', 'b', 'c', 'd']) refusal('10.0.0.1', token);
    for (let i = 0; i < 5; i++) expect(refusal('10.0.0.1', 'x')).toMatchObject({ details: { scope: 'address' } });
    expect(refusal('10.0.0.2', 'x')).toBeNull();
    expect(refusal('10.0.0.2', 'x')).toBeNull();
    advance(30_000);
    expect(refusal('10.0.0.3', 'x')).toBeNull();
  });
});
