/**
 * Host patterns, as `--worker-url-allowlist` and `--allowed-hosts` take them: an exact host name
 * (`engine-1.internal`), a wildcard suffix (`*.svc.cluster.local`: any name below it), an IP address,
 * or a CIDR block (`10.0.0.0/8`, `fd00::/8`). Names compare case-insensitively; IPv6 may be written
 * with or without brackets.
 */

type Parsed =
  | { kind: 'name'; name: string }
  | { kind: 'suffix'; suffix: string }
  | { kind: 'cidr'; v6: boolean; bits: bigint; prefix: number };

const NAME = /^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*\.?$/;

function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

function ipv4Bits(text: string): bigint | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let bits = 0n;
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part) || Number(part) > 255) return undefined;
    bits = (bits << 8n) | BigInt(Number(part));
  }
  return bits;
}

function ipv6Bits(input: string): bigint | undefined {
  if (!input.includes(':') || !/^[0-9a-f:.]+$/i.test(input)) return undefined;
  let text = input;
  const colon = text.lastIndexOf(':');
  const last = text.slice(colon + 1);
  if (last.includes('.')) {
    // A trailing dotted IPv4 part (::ffff:10.0.0.1) stands for two 16-bit groups.
    const v4 = ipv4Bits(last);
    if (v4 === undefined) return undefined;
    text = `${text.slice(0, colon + 1)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const group = (s: string) => (s === '' ? [] : s.split(':'));
  const left = group(halves[0] ?? '');
  const right = halves.length === 2 ? group(halves[1] ?? '') : [];
  const given = left.length + right.length;
  if (halves.length === 1 ? given !== 8 : given > 7) return undefined;
  const words = [...left, ...Array<string>(8 - given).fill('0'), ...right];
  let bits = 0n;
  for (const w of words) {
    if (!/^[0-9a-f]{1,4}$/i.test(w)) return undefined;
    bits = (bits << 16n) | BigInt(Number.parseInt(w, 16));
  }
  return bits;
}

/** The address as bits, or undefined when `host` is not an IP literal. */
export function ipBits(host: string): { v6: boolean; bits: bigint } | undefined {
  const h = unbracket(host);
  const v4 = ipv4Bits(h);
  if (v4 !== undefined) return { v6: false, bits: v4 };
  const v6 = ipv6Bits(h);
  if (v6 === undefined) return undefined;
  // An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is that IPv4 address.
  if (v6 >> 32n === 0xffffn) return { v6: false, bits: v6 & 0xffffffffn };
  return { v6: true, bits: v6 };
}

function parse(pattern: string): Parsed | undefined {
  const p = pattern.trim().toLowerCase();
  const slash = p.indexOf('/');
  if (slash >= 0) {
    const ip = ipBits(p.slice(0, slash));
    const prefix = Number(p.slice(slash + 1));
    const max = ip?.v6 ? 128 : 32;
    if (!ip || !/^\d{1,3}$/.test(p.slice(slash + 1)) || prefix > max) return undefined;
    return { kind: 'cidr', v6: ip.v6, bits: ip.bits, prefix };
  }
  const ip = ipBits(p);
  if (ip) return { kind: 'cidr', v6: ip.v6, bits: ip.bits, prefix: ip.v6 ? 128 : 32 };
  if (p.startsWith('*.')) return NAME.test(p.slice(2)) ? { kind: 'suffix', suffix: p.slice(1) } : undefined;
  return NAME.test(p) ? { kind: 'name', name: p.replace(/\.$/, '') } : undefined;
}

export function isHostPattern(pattern: string): boolean {
  return parse(pattern) !== undefined;
}

function matchesOne(host: string, pattern: Parsed): boolean {
  if (pattern.kind === 'name') return host === pattern.name;
  if (pattern.kind === 'suffix') return host.endsWith(pattern.suffix) && host.length > pattern.suffix.length;
  const ip = ipBits(host);
  if (!ip || ip.v6 !== pattern.v6) return false;
  const shift = BigInt((pattern.v6 ? 128 : 32) - pattern.prefix);
  return ip.bits >> shift === pattern.bits >> shift;
}

/** A compiled list of patterns; `matches(host)` takes a URL hostname (brackets allowed, no port). */
export function hostMatcher(patterns: readonly string[]): (host: string) => boolean {
  const parsed = patterns.map(parse).filter((p): p is Parsed => p !== undefined);
  return (host) => {
    const h = unbracket(host.toLowerCase()).replace(/\.$/, '');
    return parsed.some((p) => matchesOne(h, p));
  };
}

/** Loopback: 127.0.0.0/8, ::1, and `localhost` (or a name below it). */
export function isLoopback(host: string): boolean {
  const h = unbracket(host.toLowerCase()).replace(/\.$/, '');
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  const ip = ipBits(h);
  if (!ip) return false;
  return ip.v6 ? ip.bits === 1n : ip.bits >> 24n === 127n;
}

/** A peer address is loopback only as an IP literal: 127.0.0.0/8, ::1, ::ffff:127.x (never a name). */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (address === undefined || ipBits(address) === undefined) return false;
  return isLoopback(address);
}

/**
 * The host of a `Host` header (or URL authority) without its port, brackets kept off: `[::1]:8080`
 * → `::1`, `Router.Internal:30000` → `router.internal`. undefined when it is not a well-formed
 * host[:port] (userinfo, a path, spaces, an empty host, a bad port).
 */
export function hostOfAuthority(authority: string): string | undefined {
  const value = authority.trim().toLowerCase();
  let host: string;
  let rest: string;
  if (value.startsWith('[')) {
    const close = value.indexOf(']');
    if (close < 0) return undefined;
    host = value.slice(1, close);
    rest = value.slice(close + 1);
    if (ipv6Bits(host) === undefined) return undefined;
  } else {
    const colon = value.lastIndexOf(':');
    if (value.indexOf(':') !== colon) return ipv6Bits(value) === undefined ? undefined : value;
    host = colon < 0 ? value : value.slice(0, colon);
    rest = colon < 0 ? '' : value.slice(colon);
  }
  if (rest !== '' && !/^:\d{1,5}$/.test(rest)) return undefined;
  if (host === '' || /[\s/@?#\\%]/.test(host)) return undefined;
  return host.replace(/\.$/, '');
}
