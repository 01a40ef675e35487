import { describe, expect, it } from 'vitest';
import {
  hostMatcher,
  hostOfAuthority,
  ipBits,
  isHostPattern,
  isLoopback,
  isLoopbackAddress,
} from '../../../src/core/config/host-patterns.ts';

describe('host patterns', () => {
  it('matches names, *.suffix wildcards, IPs and CIDR blocks (v4, v6, IPv4-mapped)', () => {
    const m = hostMatcher([
      'engine-1.internal',
      '*.svc.cluster.local',
      '10.0.0.0/8',
      'fd00::/8',
      '192.0.2.7',
    ]);
    expect(m('ENGINE-1.internal')).toBe(true);
    expect(m('engine-1.internal.')).toBe(true);
    expect(m('engine-2.internal')).toBe(false);
    expect(m('vllm.default.svc.cluster.local')).toBe(true);
    expect(m('svc.cluster.local')).toBe(false);
    expect(m('evilsvc.cluster.local')).toBe(false);
    expect(m('10.200.3.4')).toBe(true);
    expect(m('11.0.0.1')).toBe(false);
    expect(m('::ffff:10.1.2.3')).toBe(true);
    expect(m('[fd12::1]')).toBe(true);
    expect(m('fe80::1')).toBe(false);
    expect(m('192.0.2.7')).toBe(true);
    expect(m('192.0.2.8')).toBe(false);
    expect(hostMatcher([])('anything')).toBe(false);
  });

  it('tells patterns from junk', () => {
    for (const p of ['a.b', '*.a.b', '10.0.0.0/8', '::1', '[::1]', 'fd00::/8'])
      expect(isHostPattern(p)).toBe(true);
    for (const p of ['', 'a b', 'http://a', '10.0.0.0/33', '*.', 'a/b', '1.2.3.4/x']) {
      expect(isHostPattern(p), p).toBe(false);
    }
  });

  it('reads IP literals only', () => {
    expect(ipBits('127.0.0.1')).toEqual({ v6: false, bits: 0x7f000001n });
    expect(ipBits('::ffff:127.0.0.1')).toEqual({ v6: false, bits: 0x7f000001n });
    expect(ipBits('[::1]')).toEqual({ v6: true, bits: 1n });
    expect(ipBits('localhost')).toBeUndefined();
    expect(ipBits('256.0.0.1')).toBeUndefined();
    expect(ipBits('1.2.3')).toBeUndefined();
  });

  it('loopback hosts: 127/8, ::1, localhost names; peer addresses: IP literals only, none missing', () => {
    for (const h of [
      '127.0.0.1',
      '127.9.8.7',
      '::1',
      '[::1]',
      'localhost',
      'api.localhost',
      '::ffff:127.0.0.2',
    ]) {
      expect(isLoopback(h), h).toBe(true);
    }
    for (const h of ['10.0.0.1', '::', '::2', 'localhost.evil.example', '::127.0.0.1', '128.0.0.1']) {
      expect(isLoopback(h), h).toBe(false);
    }
    expect(isLoopbackAddress('127.0.0.1')).toBe(true);
    expect(isLoopbackAddress('::ffff:127.0.0.1')).toBe(true);
    expect(isLoopbackAddress('::1')).toBe(true);
    expect(isLoopbackAddress('localhost')).toBe(false);
    expect(isLoopbackAddress(undefined)).toBe(false);
    expect(isLoopbackAddress('')).toBe(false);
    expect(isLoopbackAddress('203.0.113.9')).toBe(false);
  });

  it('takes the host of a Host header without its port', () => {
    expect(hostOfAuthority('Router.Internal:30000')).toBe('router.internal');
    expect(hostOfAuthority('router.internal.')).toBe('router.internal');
    expect(hostOfAuthority('[::1]:8080')).toBe('::1');
    expect(hostOfAuthority('[::1]')).toBe('::1');
    expect(hostOfAuthority('127.0.0.1:1')).toBe('127.0.0.1');
    expect(hostOfAuthority('::1')).toBe('::1');
    for (const bad of [
      '',
      ':80',
      'a:b',
      'a:99999999',
      'user@host',
      'a/b',
      '[zz]:1',
      '[::1',
      'a b',
      'a%2eb',
    ]) {
      expect(hostOfAuthority(bad), bad).toBeUndefined();
    }
  });
});
