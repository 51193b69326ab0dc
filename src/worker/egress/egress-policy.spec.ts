import { describe, expect, it } from '@jest/globals';
import { EgressPolicy } from './egress-policy.js';

// Decisions over given addresses: no resolution, no connection.
describe('EgressPolicy', () => {
  describe('by default', () => {
    const policy = new EgressPolicy();

    it('allows a host whose every address is public', () => {
      expect(policy.check('api.example', ['8.8.8.8', '2606:4700:4700::1111'])).toEqual({ allowed: true });
    });

    it('refuses a host when ANY address is not public', () => {
      expect(policy.check('api.example', ['8.8.8.8', '10.0.0.7'])).toEqual({
        allowed: false,
        address: '10.0.0.7',
        addressClass: 'private',
      });
    });

    it('refuses what it cannot parse', () => {
      expect(policy.check('api.example', ['not-an-ip'])).toMatchObject({ allowed: false, addressClass: 'invalid' });
    });
  });

  describe('with a CIDR allowlist', () => {
    const policy = new EgressPolicy({ cidrs: ['127.0.0.1/32', '10.1.0.0/16'] });

    it('allows addresses inside the ranges, and the IPv4-mapped form of them', () => {
      expect(policy.check('svc', ['127.0.0.1', '10.1.2.3', '::ffff:127.0.0.1'])).toEqual({ allowed: true });
    });

    it('still refuses other non-public addresses', () => {
      expect(policy.check('svc', ['127.0.0.2']).allowed).toBe(false);
      expect(policy.check('svc', ['::1']).allowed).toBe(false);
      expect(policy.check('svc', ['10.2.0.1']).allowed).toBe(false);
    });

    it('refuses a malformed entry at construction', () => {
      expect(() => new EgressPolicy({ cidrs: ['10.0.0.0/99'] })).toThrow('not a CIDR');
    });
  });

  describe('with a host allowlist', () => {
    const policy = new EgressPolicy({ hosts: ['internal.svc', '.corp.example'] });

    it('lets the named hosts (and subdomains of a dotted entry) reach non-public addresses', () => {
      expect(policy.check('internal.svc', ['10.0.0.1', '::1'])).toEqual({ allowed: true });
      expect(policy.check('API.Corp.Example.', ['192.168.0.1'])).toEqual({ allowed: true });
    });

    it('never lets a name reach a metadata or unspecified address', () => {
      expect(policy.check('internal.svc', ['169.254.169.254'])).toMatchObject({ allowed: false, addressClass: 'metadata' });
      expect(policy.check('internal.svc', ['0.0.0.0'])).toMatchObject({ allowed: false, addressClass: 'unspecified' });
    });

    it('does not extend to other names', () => {
      expect(policy.check('corp.example.evil', ['10.0.0.1']).allowed).toBe(false);
      expect(policy.check('other.svc', ['10.0.0.1']).allowed).toBe(false);
    });
  });
});
