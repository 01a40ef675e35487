/**
 * What client auth remembers about tokens: a bounded LRU of verdicts with a TTL each (accepted and
 * refused tokens have their own). Entries are keyed by the token's SHA-256 (hex), never the token
 * itself, so neither a heap dump nor a debugger shows a client's credential. Time comes from the
 * injected clock (monotonic: a TTL is a duration).
 */
import type { Clock } from '../contracts/runtime.ts';

export type TokenVerdict = 'valid' | 'invalid';

export interface TokenCacheOptions {
  clock: Clock;
  /** Entries kept at most; the least recently used goes first. */
  maxEntries: number;
  /** How long an accepted token stays accepted (ms, 0 = not remembered). */
  validTtlMs: number;
  /** How long a refused token stays refused (ms, 0 = not remembered). */
  invalidTtlMs: number;
}

interface Entry {
  verdict: TokenVerdict;
  expiresAt: number;
}

export class TokenCache {
  /** Map order is recency order: the first key is the least recently used. */
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly options: TokenCacheOptions) {}

  /** The remembered verdict for a key, undefined when unknown or expired (an expired entry is dropped). */
  get(key: string): TokenVerdict | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    if (this.options.clock.monotonic() >= entry.expiresAt) return undefined;
    this.entries.set(key, entry);
    return entry.verdict;
  }

  /** Remembers a verdict for its TTL, evicting the least recently used entries beyond the bound. */
  set(key: string, verdict: TokenVerdict): void {
    const ttl = verdict === 'valid' ? this.options.validTtlMs : this.options.invalidTtlMs;
    this.entries.delete(key);
    if (ttl <= 0) return;
    this.entries.set(key, { verdict, expiresAt: this.options.clock.monotonic() + ttl });
    while (this.entries.size > this.options.maxEntries) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
  }

  get size(): number {
    return this.entries.size;
  }

  /** The stored keys, least recently used first (for tests and introspection: hashes only). */
  keys(): string[] {
    return [...this.entries.keys()];
  }
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** The cache key of a token: its SHA-256 in hex, computed with Web Crypto. */
export async function tokenKey(token: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(token)));
  let hex = '';
  for (const byte of digest) hex += HEX[byte];
  return hex;
}
