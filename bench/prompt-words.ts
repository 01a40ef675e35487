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
