/** The request log's client: the peer, or (behind --trusted-proxies) the first untrusted X-Forwarded-For hop. */
import { describe, expect, it } from 'vitest';
import {
  clientAddress,
  NO_TRUSTED_PROXIES,
  plainHostAddress,
  trustedProxies,
} from '../../../src/core/observability/client-address.ts';

describe('clientAddress', () => {
  const lb = trustedProxies(['10.0.0.0/8', 'fd00::/8']);

  it('is the peer when no proxy is trusted, whatever X-Forwarded-For claims', () => {
    expect(clientAddress('203.0.113.9', '1.2.3.4', NO_TRUSTED_PROXIES)).toBe('203.0.113.9');
    expect(clientAddress('::ffff:203.0.113.9', undefined, NO_TRUSTED_PROXIES)).toBe('203.0.113.9');
  });

  it('is the peer when the peer is not a trusted proxy', () => {
    expect(clientAddress('203.0.113.9', '1.2.3.4', lb)).toBe('203.0.113.9');
  });

  it('walks X-Forwarded-For from the right past trusted proxies to the first other hop', () => {
    expect(clientAddress('10.0.0.5', '198.51.100.7', lb)).toBe('198.51.100.7');
    // The client's own claim (left) is not believed: the hop the trusted proxies saw is the client.
    expect(clientAddress('10.0.0.5', '1.1.1.1, 198.51.100.7, 10.2.0.1', lb)).toBe('198.51.100.7');
    // As the router forwards it: the peer appended last.
    expect(clientAddress('10.0.0.5', '198.51.100.7, 10.0.0.5', lb)).toBe('198.51.100.7');
    expect(clientAddress('fd00::1', '[2001:db8::7]:4711', lb)).toBe('2001:db8::7');
    expect(clientAddress('10.0.0.5', '198.51.100.7:51000', lb)).toBe('198.51.100.7');
  });

  it('is the leftmost proxy when every hop is trusted, the peer without any hop', () => {
    expect(clientAddress('10.0.0.5', '10.1.1.1, 10.2.2.2', lb)).toBe('10.1.1.1');
    expect(clientAddress('10.0.0.5', undefined, lb)).toBe('10.0.0.5');
    expect(clientAddress('10.0.0.5', ' , ', lb)).toBe('10.0.0.5');
  });

  it('stops at a hop that is not an address and names it (capped)', () => {
    expect(clientAddress('10.0.0.5', 'unknown', lb)).toBe('unknown');
    expect(clientAddress('10.0.0.5', `${'x'.repeat(100)}`, lb)).toHaveLength(64);
  });

  it('is unknown without a peer address (Workers): a header alone is never believed', () => {
    expect(clientAddress(undefined, '198.51.100.7', lb)).toBeUndefined();
  });

  it('plainHostAddress strips brackets, ports and the IPv4-mapped prefix', () => {
    expect(plainHostAddress('[::1]:443')).toBe('::1');
    expect(plainHostAddress('1.2.3.4:80')).toBe('1.2.3.4');
    expect(plainHostAddress('::ffff:1.2.3.4')).toBe('1.2.3.4');
    expect(plainHostAddress('2001:db8::1')).toBe('2001:db8::1');
  });
});
