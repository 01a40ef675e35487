/** A routing text given in parts (as the router extracts it) behaves exactly as the joined string. */
import { describe, expect, it } from 'vitest';
import { joinText, textLength, textPrefix } from '../../../src/core/contracts/routing-text.ts';
import { compactRoutingText } from '../../../src/core/policies/compact-text.ts';
import { RadixTree } from '../../../src/core/policies/radix-tree.ts';
import { extractRoutingInput, routingText } from '../../../src/core/routing/routing-input.ts';

function prng(seed: number) {
  return () => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    return seed / 4294967296;
  };
}

/** `text` cut at random places (empty parts included), so labels and parts overlap every way. */
function cut(text: string, rand: () => number): string[] {
  const parts: string[] = [];
  let at = 0;
  while (at < text.length) {
    const n = rand() < 0.1 ? 0 : 1 + Math.floor(rand() * 40);
    parts.push(text.slice(at, at + n));
    at += n;
  }
  return parts;
}

describe('routing text in parts', () => {
  it('the prefix tree matches and records parts exactly as it does the joined text', () => {
    const rand = prng(11);
    const system = ['system: be brief. ', 'system: answer in French. ', 'system: cite sources. '];
    const word = () => ['alpha', 'beta', 'gamma', 'delta', 'al', 'b'][Math.floor(rand() * 6)];
    const joined = new RadixTree();
    const parted = new RadixTree();
    const accept = (t: string) => t !== 'w3';
    for (let i = 0; i < 600; i++) {
      const words = Array.from({ length: 1 + Math.floor(rand() * 8) }, word).join(' ');
      const text = `${system[i % 3]}user: ${words}\n`;
      const parts = cut(text, rand);
      const tenant = `w${Math.floor(rand() * 4)}`;
      expect(parted.match(parts, accept)).toEqual(joined.match(text, accept));
      const tenants: string[] = [];
      const seen = { matched: parted.matchForInsert(parts, accept, tenants), tenants };
      parted.recordMatched(tenant);
      expect(seen).toEqual(joined.match(text, accept));
      joined.insert(text, tenant);
      expect(parted.match(parts, accept)).toEqual(joined.match(text, accept));
    }
    expect(parted.stats()).toEqual(joined.stats());
    expect(parted.size).toBe(joined.size);
    expect(parted.bytes).toBe(joined.bytes);
    expect(new Map(parted.tenantSizes())).toEqual(new Map(joined.tenantSizes()));
  });

  it('compact forms, prefixes and lengths agree with the joined text', () => {
    const rand = prng(5);
    const text = 'You are a careful assistant. '.repeat(20) + 'user: what now?';
    for (let round = 0; round < 20; round++) {
      const parts = cut(text, rand);
      expect(joinText(parts)).toBe(text);
      expect(textLength(parts)).toBe(text.length);
      expect(compactRoutingText(parts)).toBe(compactRoutingText(text));
      for (const max of [0, 1, 63, 64, 65, 300, text.length, text.length + 5]) {
        expect(joinText(textPrefix(parts, max))).toBe(text.slice(0, max));
      }
    }
  });

  it('a chat request is extracted as its strings in order, not joined', () => {
    const system = 'You are a careful assistant. '.repeat(300);
    const body = {
      messages: [
        { role: 'system', content: system },
        { role: 'user', content: 'hello' },
      ],
    };
    const needs = { text: true, routingKey: false, sessionId: false };
    const { text } = extractRoutingInput(body, '/v1/chat/completions', () => undefined, needs);
    expect(Array.isArray(text)).toBe(true);
    // The system prompt is the request's own string, not a copy.
    expect((text as string[]).includes(system)).toBe(true);
    expect(joinText(text as string[])).toBe(routingText(body, '/v1/chat/completions'));
    const empty = extractRoutingInput({ messages: [] }, '/v1/chat/completions', () => undefined, needs);
    expect(empty.text).toBeUndefined();
  });
});
