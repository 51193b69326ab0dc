import { describe, expect, it } from '@jest/globals';
import { classifyAddress, type AddressClass } from './address-classification.js';
import { cidrContains, formatIp, parseCidr, parseIp } from './ip-address.js';

// Pure classification of literal addresses: nothing here resolves or connects.
describe('classifyAddress', () => {
  it.each<[string, AddressClass]>([
    // IPv4
    ['8.8.8.8', 'public'],
    ['93.184.216.34', 'public'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['172.32.0.1', 'public'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'carrier_nat'],
    ['100.127.255.255', 'carrier_nat'],
    ['100.128.0.1', 'public'],
    ['169.254.1.1', 'link_local'],
    ['169.254.169.254', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'reserved'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.10', 'reserved'],
    ['198.18.0.1', 'reserved'],
    // IPv6
    ['2606:4700:4700::1111', 'public'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fc00::1', 'unique_local'],
    ['fd12:3456::1', 'unique_local'],
    ['fd00:ec2::254', 'metadata'],
    ['fe80::1', 'link_local'],
    ['fe80::1%eth0', 'link_local'],
    ['febf::1', 'link_local'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'reserved'],
    ['[::1]', 'loopback'],
    // IPv4 inside IPv6: classified as the IPv4 address they reach
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::ffff:10.1.2.3', 'private'],
    ['::ffff:8.8.8.8', 'public'],
    ['::127.0.0.1', 'loopback'],
    ['64:ff9b::a00:1', 'private'],
    ['64:ff9b::808:808', 'public'],
    ['2002:7f00:1::', 'loopback'],
    ['2002:0808:0808::1', 'public'],
    // not addresses at all
    ['localhost', 'invalid'],
    ['127.1', 'invalid'],
    ['', 'invalid'],
  ])('%s is %s', (address, expected) => {
    expect(classifyAddress(address)).toBe(expected);
  });
});

describe('parseIp and CIDRs', () => {
  it('expands compressed IPv6 and dotted tails', () => {
    expect(formatIp(parseIp('::ffff:10.0.0.1')!)).toBe('0:0:0:0:0:ffff:a00:1');
    expect(formatIp(parseIp('fe80::1:2')!)).toBe('fe80:0:0:0:0:0:1:2');
    expect(formatIp(parseIp('1:2:3:4:5:6:7:8')!)).toBe('1:2:3:4:5:6:7:8');
  });

  it.each([
    ['10.0.0.0/8', '10.255.1.1', true],
    ['10.0.0.0/8', '11.0.0.1', false],
    ['172.16.0.0/12', '172.31.0.1', true],
    ['127.0.0.1', '127.0.0.1', true],
    ['127.0.0.1', '127.0.0.2', false],
    ['fc00::/7', 'fdff::1', true],
    ['fc00::/7', 'fe00::1', false],
    ['0.0.0.0/0', '8.8.8.8', true],
    ['::/0', '8.8.8.8', false],
  ])('%s contains %s: %s', (cidr, address, expected) => {
    expect(cidrContains(parseCidr(cidr), parseIp(address)!)).toBe(expected);
  });

  it.each(['10.0.0.0/33', '10.0.0/8', 'example.com/8', '::/129', '10.0.0.0/8/1', '10.0.0.0/x'])('refuses %s', (text) => {
    expect(() => parseCidr(text)).toThrow('not a CIDR');
  });
});
