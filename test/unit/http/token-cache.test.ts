import { describe, expect, it } from 'vitest';
import { TokenCache, tokenKey } from '../../../src/core/http/token-cache.ts';
import { FakeClock } from '../../support/fake-clock.ts';

const cache = (clock: FakeClock, maxEntries = 100) =>
  new TokenCache({ clock, maxEntries, validTtlMs: 300_000, invalidTtlMs: 30_000 });

describe('TokenCache', () => {
  it('remembers an accepted token for the positive TTL, then forgets it', () => {
    const clock = new FakeClock();
    const c = cache(clock);
    c.set('k', 'valid');
    clock.advance(299_999);
    expect(c.get('k')).toBe('valid');
    clock.advance(1);
    expect(c.get('k')).toBeUndefined();
    expect(c.size).toBe(0);
  });

  it('remembers a refused token for the (shorter) negative TTL', () => {
    const clock = new FakeClock();
    const c = cache(clock);
    c.set('k', 'invalid');
    clock.advance(29_999);
    expect(c.get('k')).toBe('invalid');
    clock.advance(1);
    expect(c.get('k')).toBeUndefined();
  });

  it('a new verdict replaces the old one with a fresh TTL', () => {
    const clock = new FakeClock();
    const c = cache(clock);
    c.set('k', 'invalid');
    clock.advance(20_000);
    c.set('k', 'valid');
    clock.advance(200_000);
    expect(c.get('k')).toBe('valid');
  });

  it('keeps at most maxEntries, evicting the least recently used first', () => {
    const clock = new FakeClock();
    const c = cache(clock, 2);
    c.set('a', 'valid');
    c.set('b', 'valid');
    expect(c.get('a')).toBe('valid'); // a is now the most recently used
    c.set('c', 'invalid');
    expect(c.size).toBe(2);
    expect(c.get('b')).toBeUndefined();
    expect(c.get('a')).toBe('valid');
    expect(c.get('c')).toBe('invalid');
    for (let i = 0; i < 50; i++) c.set(`x${i}`, 'valid');
    expect(c.size).toBe(2);
    expect(c.keys()).toEqual(['x48', 'x49']);
  });

  it('a TTL of 0 remembers nothing', () => {
    const clock = new FakeClock();
    const c = new TokenCache({ clock, maxEntries: 10, validTtlMs: 0, invalidTtlMs: 0 });
    c.set('a', 'valid');
    c.set('b', 'invalid');
    expect(c.size).toBe(0);
    expect(c.get('a')).toBeUndefined();
  });
});

describe('tokenKey', () => {
  it('is the SHA-256 of the token in hex (Web Crypto), never the token', async () => {
    expect(await tokenKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    const key = await tokenKey('glpat-secret-token');
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(key).not.toContain('secret');
    expect(await tokenKey('glpat-secret-token')).toBe(key);
    expect(await tokenKey('glpat-secret-tokeN')).not.toBe(key);
  });
});
