/** Seeded filler text for benchmark prompts: the same seed gives the same words on every run. */

const WORDS = 'the of and to in is for on with as by at from that this which model cache token prompt'.split(
  ' ',
);

export function promptWords(seed: number): { rand: () => number; words: (chars: number) => string } {
  let state = seed;
  const rand = () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state / 4294967296;
  };
  const words = (chars: number) => {
    let s = '';
    while (s.length < chars) s += `${WORDS[Math.floor(rand() * WORDS.length)]} `;
    return s.slice(0, chars);
  };
  return { rand, words };
}

/**
 * A source of chat bodies of about `size` characters: one of `systemPrompts` system prompts of the
 * size, then a user turn. `turns` 0: every turn is new, so `cache_aware` grows its tree on every
 * request; k: the turns cycle through k texts, so once warm no request grows it.
 */
export function chatBodies(
  size: number,
  options: { systemPrompts: number; turns: number; seed: number },
): () => string {
  const { rand, words } = promptWords(options.seed);
  const { systemPrompts, turns } = options;
  const systems = Array.from({ length: systemPrompts }, (_, i) => `${i} ${words(Math.max(64, size - 96))}`);
  const cycle = Array.from({ length: turns }, (_, k) => `question ${k}: ${words(40)}`);
  let turn = 0;
  const nextTurn = () => (turns > 0 ? (cycle[turn++ % turns] as string) : `question ${turn++}: ${words(40)}`);
  return () =>
    JSON.stringify({
      model: 'sim-model',
      max_tokens: 16,
      messages: [
        { role: 'system', content: systems[Math.floor(rand() * systems.length)] },
        { role: 'user', content: nextTurn() },
      ],
    });
}
