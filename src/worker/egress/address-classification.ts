import { cidrContains, embeddedIPv4, parseCidr, parseIp, type Cidr, type IpAddress } from './ip-address.js';

/**
 * What an address reaches. Only `public` is allowed out by default; everything else could reach
 * the worker itself, its network or its cloud's metadata service (SSRF).
 */
export type AddressClass =
  | 'public'
  | 'loopback'
  | 'private'
  | 'carrier_nat'
  | 'link_local'
  | 'unique_local'
  | 'metadata'
  | 'unspecified'
  | 'multicast'
  | 'broadcast'
  | 'reserved'
  | 'invalid';

/** IPv6 ranges that carry an IPv4 address: classified as that address, found at this byte. */
type Embedded = { readonly embeddedAt: 2 | 12 };

const rules = <What>(entries: readonly (readonly [string, What])[]): (readonly [Cidr, What])[] =>
  entries.map(([cidr, what]) => [parseCidr(cidr), what] as const);

const AT_12: Embedded = { embeddedAt: 12 };
const AT_2: Embedded = { embeddedAt: 2 };
const IPV4_MAPPED = parseCidr('::ffff:0:0/96');

// First match wins, so the specific entries (metadata endpoints) come before their ranges.
const IPV4_RULES = rules<AddressClass>([
  ['0.0.0.0/32', 'unspecified'],
  ['0.0.0.0/8', 'reserved'],
  ['10.0.0.0/8', 'private'],
  ['100.100.100.200/32', 'metadata'],
  ['100.64.0.0/10', 'carrier_nat'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.169.254/32', 'metadata'],
  ['169.254.170.2/32', 'metadata'],
  ['169.254.0.0/16', 'link_local'],
  ['168.63.129.16/32', 'metadata'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'reserved'],
  ['192.0.2.0/24', 'reserved'],
  ['192.88.99.0/24', 'reserved'],
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'reserved'],
  ['198.51.100.0/24', 'reserved'],
  ['203.0.113.0/24', 'reserved'],
  ['224.0.0.0/4', 'multicast'],
  ['255.255.255.255/32', 'broadcast'],
  ['240.0.0.0/4', 'reserved'],
]);

const IPV6_RULES = rules<AddressClass | Embedded>([
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  // IPv4-mapped (::ffff:a.b.c.d) and the deprecated IPv4-compatible (::a.b.c.d) forms.
  ['::ffff:0:0/96', AT_12],
  ['::/96', AT_12],
  // NAT64 translates the embedded IPv4 address: it reaches whatever that address reaches.
  ['64:ff9b::/96', AT_12],
  ['64:ff9b:1::/48', 'private'],
  ['100::/64', 'reserved'],
  ['2001:db8::/32', 'reserved'],
  ['2001::/23', 'reserved'],
  ['2002::/16', AT_2],
  ['fd00:ec2::254/128', 'metadata'],
  ['fc00::/7', 'unique_local'],
  ['fe80::/10', 'link_local'],
  ['fec0::/10', 'private'],
  ['ff00::/8', 'multicast'],
  ['2000::/3', 'public'],
  ['::/0', 'reserved'],
]);

/** Classifies one literal address. Pure: no DNS, no network. */
export function classifyAddress(address: string): AddressClass {
  const ip = parseIp(address);
  return ip ? classifyIp(ip) : 'invalid';
}

export function classifyIp(ip: IpAddress): AddressClass {
  if (ip.family === 4) return IPV4_RULES.find(([cidr]) => cidrContains(cidr, ip))?.[1] ?? 'public';
  // The last IPv6 rule (::/0) matches everything.
  const match = IPV6_RULES.find(([cidr]) => cidrContains(cidr, ip))![1];
  return typeof match === 'string' ? match : classifyIp(embeddedIPv4(ip, match.embeddedAt));
}

/** The IPv4 address an IPv4-mapped IPv6 address stands for (the same host), or null. */
export function unmapIPv4(ip: IpAddress): IpAddress | null {
  return ip.family === 6 && cidrContains(IPV4_MAPPED, ip) ? embeddedIPv4(ip, 12) : null;
}
