/**
 * The client's address, as the request log names it. The peer (the TCP connection's address) is
 * the client unless it is one of `--trusted-proxies`: then the `X-Forwarded-For` hops are walked
 * from the right, and the first hop that is not a trusted proxy is the client (the hops to the left
 * of it are whatever the client wrote). A hop that is not an IP address ends the walk and is
 * reported as it is (up to 64 characters: `unknown`, an obfuscated node). Without a peer address
 * (Workers) the client is unknown: a forwarded header alone is never believed.
 */
import { hostMatcher, ipBits } from '../config/host-patterns.ts';

/** Whether an address is one of the trusted proxies (IPs and CIDR blocks). */
export type TrustedProxies = (address: string) => boolean;

export const NO_TRUSTED_PROXIES: TrustedProxies = () => false;

export function trustedProxies(patterns: readonly string[]): TrustedProxies {
  if (patterns.length === 0) return NO_TRUSTED_PROXIES;
  const matches = hostMatcher(patterns);
  return (address) => ipBits(address) !== undefined && matches(address);
}

const MAX_HOP_CHARS = 64;

/** An address as a hop or a peer may write it, plain: `[::1]:443` → `::1`, `1.2.3.4:80` → `1.2.3.4`, `::ffff:1.2.3.4` → `1.2.3.4`. */
export function plainHostAddress(text: string): string {
  let address = text;
  if (address.startsWith('[')) {
    const close = address.indexOf(']');
    if (close > 0) address = address.slice(1, close);
  } else if (address.indexOf(':') > 0 && address.indexOf(':') === address.lastIndexOf(':')) {
    address = address.slice(0, address.indexOf(':')); // IPv4 with a port
  }
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  return mapped ? (mapped[1] as string) : address;
}

/**
 * `forwardedFor` is the X-Forwarded-For value (the hops the peer reported, optionally with the
 * peer itself appended last, as the router forwards it: a trusted peer is skipped either way).
 */
export function clientAddress(
  peer: string | undefined,
  forwardedFor: string | undefined,
  trusted: TrustedProxies,
): string | undefined {
  if (peer === undefined) return undefined;
  let client = plainHostAddress(peer);
  if (forwardedFor === undefined || !trusted(client)) return client;
  let end = forwardedFor.length;
  while (end > 0) {
    const comma = forwardedFor.lastIndexOf(',', end - 1);
    const hop = forwardedFor.slice(comma + 1, end).trim();
    end = Math.max(comma, 0);
    if (hop === '') continue;
    const address = plainHostAddress(hop);
    if (ipBits(address) === undefined) return hop.slice(0, MAX_HOP_CHARS);
    client = address;
    if (!trusted(address)) return address;
  }
  return client;
}
