import { describe, expect, it } from 'vitest';
import { compactRoutingText } from '../../../src/core/policies/compact-text.ts';

const system = 'You are a careful assistant. '.repeat(40); // 1160 chars

describe('compact routing text', () => {
  it('two characters per block (a partial last block too), no surrogates', () => {
    expect(compactRoutingText('')).toBe('');
    expect(compactRoutingText('x'.repeat(64))).toHaveLength(2);
    expect(compactRoutingText('x'.repeat(65))).toHaveLength(4);
    const c = compactRoutingText(system);
    expect(c).toHaveLength(2 * Math.ceil(system.length / 64));
    for (const ch of c) expect(ch.charCodeAt(0) >= 0x4000 && ch.charCodeAt(0) <= 0xbfff).toBe(true);
  });

  it('texts sharing k whole blocks share exactly 2k characters', () => {
    const a = compactRoutingText(`${system}user: where is the station?`);
    const b = compactRoutingText(`${system}user: when does the train leave?`);
    const whole = Math.floor(`${system}user: wh`.length / 64); // the texts agree up to "user: wh"
    let common = 0;
    while (common < a.length && a[common] === b[common]) common++;
    expect(common).toBe(2 * whole);
  });

  it('a turn extends the previous one: the compact form of the next turn starts with the whole blocks', () => {
    const turn1 = `${system}user: hi`;
    const turn2 = `${turn1}\nassistant: hello\nuser: more`;
    const c1 = compactRoutingText(turn1);
    const c2 = compactRoutingText(turn2);
    const whole = 2 * Math.floor(turn1.length / 64);
    expect(c2.startsWith(c1.slice(0, whole))).toBe(true);
  });

  it('the same characters as a partial block or followed by more differ', () => {
    expect(compactRoutingText('abc')).not.toBe(compactRoutingText('abcd').slice(0, 2));
    expect(compactRoutingText('a'.repeat(64))).not.toBe(compactRoutingText('b'.repeat(64)));
  });

  it('the hash does not change between versions (isolates and their object may run different builds)', () => {
    const codes = (t: string) => [...t].map((ch) => ch.charCodeAt(0).toString(16));
    const c = compactRoutingText([system, 'user: ', 'where is the station?']);
    expect(c).toHaveLength(38);
    expect(codes(c.slice(0, 6))).toEqual(['47b5', 'a62f', 'aa4a', 'a212', '8461', '40a7']);
    expect(codes(c.slice(-4))).toEqual(['8e1d', '5e63', 'bd8c', '5e97']);
    expect(codes(compactRoutingText('abc'))).toEqual(codes('\u699a\u92c7'));
  });
});
