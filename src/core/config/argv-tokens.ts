/**
 * The tokenizer of the command-line parser: it splits argv into flags (the name, an inline
 * `=value`, the arguments that follow it) and stray arguments, knowing nothing of the flag table.
 * How many of the following arguments a flag takes is for argv.ts to decide, from the flag's kind;
 * FlagValues hands them out one by one.
 */

/** Text that reads as a number: `-1` is a value, not a flag. */
export const NUMERIC = /^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/;

/** One flag as given, with the arguments up to the next flag (or `--`) for it to take from. */
export interface FlagToken {
  readonly kind: 'flag';
  /** The flag as spelled, without any inline value: `--port` in `--port=8000`. */
  readonly name: string;
  /** The text after the first `=` of a `--name=value` token; undefined when there is none. */
  readonly inline: string | undefined;
  /** The arguments that followed the flag, up to the next flag or `--`. */
  readonly values: readonly string[];
}

/** An argument that follows no flag: one before the first flag, or one after a lone `--`. */
export interface StrayToken {
  readonly kind: 'stray';
  readonly text: string;
}

export type ArgToken = FlagToken | StrayToken;

/** A flag token's values, taken from the front as the flag's reader asks for them. */
export class FlagValues {
  readonly #all: readonly string[];
  #next = 0;

  constructor(all: readonly string[]) {
    this.#all = all;
  }

  peek(): string | undefined {
    return this.#all[this.#next];
  }

  take(): string | undefined {
    return this.#all[this.#next++];
  }

  takeAll(): string[] {
    const rest = this.#all.slice(this.#next);
    this.#next = this.#all.length;
    return rest;
  }
}

/** Whether the argument is a flag (or `--`) rather than a value. */
export function isFlagToken(arg: string): boolean {
  return arg.length > 1 && arg.startsWith('-') && !NUMERIC.test(arg);
}

/** `--port=8000` → name `--port`, inline `8000`. Only `--long` flags take `=`: `-p=1` is one name. */
export function splitFlag(arg: string): { name: string; inline: string | undefined } {
  const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
  return eq > 0 ? { name: arg.slice(0, eq), inline: arg.slice(eq + 1) } : { name: arg, inline: undefined };
}

/**
 * argv → tokens, in order. A lone `--` (`npm start -- --port 1`) yields no token, but it still ends
 * the arguments of the flag before it.
 */
export function tokenizeArgv(argv: readonly string[]): ArgToken[] {
  const tokens: ArgToken[] = [];
  let current: { kind: 'flag'; name: string; inline: string | undefined; values: string[] } | undefined;
  for (const arg of argv) {
    if (isFlagToken(arg)) {
      current = arg === '--' ? undefined : { kind: 'flag', ...splitFlag(arg), values: [] };
      if (current) tokens.push(current);
    } else if (current) {
      current.values.push(arg);
    } else {
      tokens.push({ kind: 'stray', text: arg });
    }
  }
  return tokens;
}
