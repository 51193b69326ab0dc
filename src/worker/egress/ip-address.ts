import { isIPv4, isIPv6 } from 'node:net';

/** An IP address as bytes: 4 for IPv4, 16 for IPv6. */
export interface IpAddress {
  readonly family: 4 | 6;
  readonly bytes: Uint8Array;
}

export interface Cidr {
  readonly family: 4 | 6;
  readonly bytes: Uint8Array;
  readonly prefix: number;
}

/** Parses a literal address (IPv6 may be bracketed or carry a `%zone`); null when it is not one. */
export function parseIp(text: string): IpAddress | null {
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  if (isIPv4(bare)) return { family: 4, bytes: Uint8Array.from(bare.split('.').map(Number)) };
  const withoutZone = bare.split('%')[0];
  if (isIPv6(withoutZone)) return { family: 6, bytes: parseIPv6(withoutZone) };
  return null;
}

function parseIPv6(text: string): Uint8Array {
  // A dotted-quad tail (::ffff:10.0.0.1) stands for the last two groups: rewrite it as hex.
  const lastColon = text.lastIndexOf(':');
  const last = text.slice(lastColon + 1);
  let hex = text;
  if (last.includes('.')) {
    const [a, b, c, d] = last.split('.').map(Number) as [number, number, number, number];
    hex = `${text.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const groups = (part: string) => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const [head, tail] = hex.includes('::') ? hex.split('::') : [hex, undefined];
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const all = [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
  const bytes = new Uint8Array(16);
  all.forEach((group, i) => {
    bytes[i * 2] = group >> 8;
    bytes[i * 2 + 1] = group & 0xff;
  });
  return bytes;
}

/** `10.0.0.0/8`, `fc00::/7`, or a bare address (a /32 or /128). Throws on anything else. */
export function parseCidr(text: string): Cidr {
  const [address, prefixText, extra] = text.trim().split('/');
  const ip = parseIp(address ?? '');
  const max = ip?.family === 4 ? 32 : 128;
  const prefix = prefixText === undefined ? max : Number(prefixText);
  if (!ip || extra !== undefined || !/^\d{1,3}$/.test(prefixText ?? String(max)) || prefix > max) {
    throw new Error(`not a CIDR: ${JSON.stringify(text)}`);
  }
  return { family: ip.family, bytes: ip.bytes, prefix };
}

export function cidrContains(cidr: Cidr, ip: IpAddress): boolean {
  if (cidr.family !== ip.family) return false;
  const whole = Math.floor(cidr.prefix / 8);
  for (let i = 0; i < whole; i++) if (cidr.bytes[i] !== ip.bytes[i]) return false;
  const bits = cidr.prefix % 8;
  if (bits === 0) return true;
  const mask = (0xff << (8 - bits)) & 0xff;
  return (cidr.bytes[whole] & mask) === (ip.bytes[whole] & mask);
}

/** The IPv4 address an IPv6 address embeds at byte `offset` (mapped, NAT64, 6to4 forms). */
export function embeddedIPv4(ip: IpAddress, offset: number): IpAddress {
  return { family: 4, bytes: ip.bytes.slice(offset, offset + 4) };
}

export function formatIp(ip: IpAddress): string {
  if (ip.family === 4) return [...ip.bytes].join('.');
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((ip.bytes[i] << 8) | ip.bytes[i + 1]).toString(16));
  return groups.join(':');
}
