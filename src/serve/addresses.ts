import { BlockList, isIP } from 'node:net';

/** One entry of SWEEPER_UI_TRUSTED_PROXIES: an address, or a network in CIDR notation. */
export interface AddressEntry {
  address: string;
  /** The prefix length; the whole address (32 or 128) for a single address. */
  prefix: number;
  family: 'ipv4' | 'ipv6';
}

/**
 * A comma-separated list of IP addresses and CIDR networks (`10.0.0.5, 10.1.0.0/16, fd00::/8`),
 * or the problem with it. A network of prefix 0 is refused: it would trust every address.
 */
export function parseAddressList(text: string): AddressEntry[] | string {
  const entries: AddressEntry[] = [];
  for (const raw of text.split(',')) {
    const item = raw.trim();
    if (item === '') continue;
    const [address = '', prefixText, extra] = item.split('/');
    const version = isIP(address);
    if (version === 0 || extra !== undefined)
      return `"${item}" is not an IP address or a CIDR network such as 10.0.0.0/8`;
    const bits = version === 4 ? 32 : 128;
    const prefix = prefixText === undefined ? bits : Number(prefixText);
    if (!/^\d{1,3}$/.test(prefixText ?? String(bits)) || prefix < 1 || prefix > bits) {
      return `"${item}" has a prefix outside 1..${bits} (a prefix of 0 would trust every address)`;
    }
    entries.push({ address, prefix, family: version === 4 ? 'ipv4' : 'ipv6' });
  }
  if (entries.length === 0) return 'names no address';
  return entries;
}

/** Whether a peer's address is one of `entries`; an IPv4 peer seen on an IPv6 socket (`::ffff:a.b.c.d`) counts as IPv4. */
export function addressMatcher(entries: readonly AddressEntry[]): (address: string | undefined) => boolean {
  const list = new BlockList();
  for (const e of entries) list.addSubnet(e.address, e.prefix, e.family);
  return (address) => {
    if (!address) return false;
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
    const plain = mapped ?? address;
    const version = isIP(plain);
    if (version === 0) return false;
    return list.check(plain, version === 4 ? 'ipv4' : 'ipv6');
  };
}

/** A host to listen on that only this machine can reach: `localhost`, 127.0.0.0/8 or ::1. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1');
  if (bare.toLowerCase() === 'localhost') return true;
  return addressMatcher([
    { address: '127.0.0.0', prefix: 8, family: 'ipv4' },
    { address: '::1', prefix: 128, family: 'ipv6' },
  ])(bare);
}
