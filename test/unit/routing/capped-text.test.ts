import { describe, expect, it } from 'vitest';
import { CappedText, MAX_ROUTING_TEXT_CHARS } from '../../../src/core/routing/capped-text.ts';
import { routingText } from '../../../src/core/routing/routing-input.ts';

const MAX = MAX_ROUTING_TEXT_CHARS;

describe('routing text cap', () => {
  it('joins parts up to the cap and cuts the part that crosses it', () => {
    const t = new CappedText(10);
    t.add('abc', 'defgh', 'ijklmnop', 'never');
    expect(t.text()).toBe('abcdefghij');
    expect(t.room).toBe(0);
    const whole = new CappedText(10);
    whole.add('abc', 'def');
    expect(whole.text()).toBe('abcdef');
  });

  it('reads at most MAX_ROUTING_TEXT_CHARS of a huge chat, responses or completions request', () => {
    const huge = 'x'.repeat(MAX + 1000);
    const chat = routingText(
      {
        messages: [
          { role: 'user', content: huge },
          { role: 'user', content: 'more' },
        ],
      },
      '/v1/chat/completions',
    );
    expect(chat).toHaveLength(MAX);
    expect(chat.startsWith('user: xxx')).toBe(true);
    const parts = routingText(
      { messages: [{ role: 'user', content: [{ type: 'text', text: huge }] }] },
      '/v1/chat/completions',
    );
    expect(parts).toHaveLength(MAX);
    expect(routingText({ input: [huge, 'tail'] }, '/v1/responses')).toHaveLength(MAX);
    expect(routingText({ prompt: [huge, huge] }, '/v1/completions')).toHaveLength(MAX);
  });

  it('joins only the token ids that fit (an id and its separator take two characters at least)', () => {
    const ids = Array.from({ length: MAX }, (_, i) => i % 10);
    const text = routingText({ prompt: ids }, '/v1/completions');
    expect(text).toHaveLength(MAX);
    expect(text.startsWith('0 1 2 3')).toBe(true);
    // Short prompts are unchanged: a turn's ids are still a prefix of the next turn's.
    expect(routingText({ prompt: [1, 2, 3] }, '/v1/completions')).toBe('1 2 3');
  });
});
