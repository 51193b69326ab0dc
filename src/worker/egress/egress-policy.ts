import { classifyIp, unmapIPv4, type AddressClass } from './address-classification.js';
import { cidrContains, parseCidr, parseIp, type Cidr, type IpAddress } from './ip-address.js';

/**
 * Exceptions to "public addresses only", from configuration.
 * - `cidrs`: addresses inside them are allowed whatever their class (`127.0.0.1/32`, `10.1.0.0/16`);
 *   an IPv4 range also covers the IPv4-mapped IPv6 form of its addresses.
 * - `hosts`: names whose resolved addresses may be non-public (an internal service). An entry
 *   starting with "." also covers every subdomain. A named host is still never allowed to reach a
 *   metadata or unspecified address: only an explicit CIDR can allow those.
 */
export interface EgressAllowlist {
  readonly cidrs?: readonly string[];
  readonly hosts?: readonly string[];
}

export type EgressVerdict =
  { readonly allowed: true } | { readonly allowed: false; readonly address: string; readonly addressClass: AddressClass };

const NEVER_BY_HOST_NAME: ReadonlySet<AddressClass> = new Set(['metadata', 'unspecified', 'invalid']);

export class EgressPolicy {
  private readonly cidrs: readonly Cidr[];
  private readonly hosts: readonly string[];

  /** Throws on a malformed CIDR: a typo in an allowlist must stop start-up, not widen it. */
  constructor(allow: EgressAllowlist = {}) {
    this.cidrs = (allow.cidrs ?? []).map(parseCidr);
    this.hosts = (allow.hosts ?? []).map(normalizeHost).filter((host) => host.length > 0);
  }

  /** Allowed only if EVERY address is: one bad answer among good ones refuses the host. */
  check(hostname: string, addresses: readonly string[]): EgressVerdict {
    const byName = this.hostAllowed(hostname);
    for (const address of addresses) {
      const ip = parseIp(address);
      if (ip && this.cidrAllows(ip)) continue;
      const addressClass = ip ? classifyIp(ip) : 'invalid';
      if (addressClass === 'public') continue;
      if (byName && !NEVER_BY_HOST_NAME.has(addressClass)) continue;
      return { allowed: false, address, addressClass };
    }
    return { allowed: true };
  }

  hostAllowed(hostname: string): boolean {
    const host = normalizeHost(hostname);
    return this.hosts.some((entry) => (entry.startsWith('.') ? host.endsWith(entry) : host === entry));
  }

  private cidrAllows(ip: IpAddress): boolean {
    const unmapped = unmapIPv4(ip);
    return this.cidrs.some((cidr) => cidrContains(cidr, ip) || (unmapped !== null && cidrContains(cidr, unmapped)));
  }
}

function normalizeHost(host: string): string {
  const lower = host.trim().toLowerCase();
  const bare = lower.startsWith('[') && lower.endsWith(']') ? lower.slice(1, -1) : lower;
  return bare.endsWith('.') ? bare.slice(0, -1) : bare;
}
