/**
 * The one error type of the configuration layer. Every configuration problem (unknown flag, bad
 * value, unreadable config file) surfaces as a ConfigError; adapters print `message` to stderr
 * and exit with `exitCode` (2, the conventional code for a usage error).
 */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly exitCode = 2;
  /** The flag or environment variable the bad value came from, as the user spelled it. */
  readonly flag?: string;
  /** The config path (dot notation, e.g. `retry.jitterFactor`) the problem is about. */
  readonly path?: string;

  constructor(message: string, options: { flag?: string; path?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    if (options.flag !== undefined) this.flag = options.flag;
    if (options.path !== undefined) this.path = options.path;
  }
}

/** Levenshtein edit distance (insert, delete, substitute: cost 1 each). */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + cost);
    }
    prev = cur;
  }
  return prev[b.length]!;
}

/** The candidate nearest to `input`, if it is close enough to be a plausible typo. */
export function closest(input: string, names: Iterable<string>): string | undefined {
  const candidates = [...names];
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    const d = editDistance(input.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  const limit = input.length <= 3 ? 0 : Math.max(2, Math.round(input.length * 0.35));
  if (bestDistance <= limit) return best;
  // A truncated name ("bootstrap" for "bootstrapPort") is a typo too, however far in edits.
  const lower = input.toLowerCase();
  for (const candidate of candidates) {
    if (lower.length >= 4 && candidate.toLowerCase().startsWith(lower)) return candidate;
  }
  return undefined;
}

/** One schema complaint, with its path already in dot notation (`workers.urls[1]`). */
export interface ConfigIssue {
  readonly path: string;
  readonly segments: readonly (string | number)[];
  readonly message: string;
  /** For cross-field checks: the other field involved, and the message to give if that one is to blame. */
  readonly related?: { readonly path: string; readonly message: string };
}

/** `['workers', 'urls', 1]` → `workers.urls[1]`. */
export function formatPath(segments: readonly (string | number)[]): string {
  let out = '';
  for (const s of segments) out += typeof s === 'number' ? `[${s}]` : out === '' ? s : `.${s}`;
  return out;
}
