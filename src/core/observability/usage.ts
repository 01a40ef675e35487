/**
 * Token counts an engine reports in `usage`, read from the end of its answer without parsing it:
 * a non-streaming JSON answer ends with its `usage` object (vLLM, SGLang, OpenAI; only
 * `prompt_logprobs`, `prompt_token_ids` and `kv_transfer_params` may follow it), and a stream with
 * `stream_options.include_usage` ends with a usage event before `[DONE]`. So only the last
 * USAGE_WINDOW bytes are searched, backwards, for the last `"usage"` key, and only that object is
 * read (`prompt_tokens`/`completion_tokens`, or the Responses API's `input_tokens`/`output_tokens`).
 * An answer whose `usage` lies further back (prompt logprobs asked for) is not counted; `"usage":
 * null` (OpenAI's intermediate chunks, when it is the last one) is nothing to count.
 *
 * A relayed body keeps references to its last chunks (ChunkTail: no copy per chunk); only at its
 * end are their last bytes joined, once, and searched.
 */

export interface TokenUsage {
  prompt?: number;
  completion?: number;
}

/** How far from the end of an answer `usage` is looked for (bytes). */
export const USAGE_WINDOW = 4096;

const encoder = new TextEncoder();
const USAGE_KEY = encoder.encode('"usage"');
const PROMPT_KEYS = [encoder.encode('prompt_tokens'), encoder.encode('input_tokens')];
const COMPLETION_KEYS = [encoder.encode('completion_tokens'), encoder.encode('output_tokens')];

const QUOTE = 0x22;
/** `g`, and where it stands in `"usage"`. */
const G = 0x67;
const G_AT = 4;
const BACKSLASH = 0x5c;
const COLON = 0x3a;

function matchesAt(b: Uint8Array, at: number, word: Uint8Array): boolean {
  for (let k = 0; k < word.length; k++) if (b[at + k] !== word[k]) return false;
  return true;
}

function skipSpace(b: Uint8Array, at: number): number {
  let i = at;
  while (i < b.length && (b[i] === 0x20 || b[i] === 0x0a || b[i] === 0x0d || b[i] === 0x09)) i++;
  return i;
}

/** The index of the quote closing the string that opens at `at`, or -1. */
function stringEnd(b: Uint8Array, at: number): number {
  for (let i = at + 1; i < b.length; i++) {
    if (b[i] === BACKSLASH) i++;
    else if (b[i] === QUOTE) return i;
  }
  return -1;
}

function isKey(b: Uint8Array, start: number, end: number, keys: readonly Uint8Array[]): boolean {
  for (const key of keys) if (key.length === end - start && matchesAt(b, start, key)) return true;
  return false;
}

function readCount(b: Uint8Array, at: number): number | undefined {
  let n = 0;
  let i = at;
  while (i < b.length && i - at < 15 && (b[i] as number) >= 0x30 && (b[i] as number) <= 0x39) {
    n = n * 10 + ((b[i] as number) - 0x30);
    i++;
  }
  return i === at ? undefined : n;
}

/** Reads the string at `at`; when it is a count's key at the object's own level, the count. Returns the string's end. */
function readMember(b: Uint8Array, at: number, own: boolean, usage: TokenUsage): number {
  const end = stringEnd(b, at);
  if (end < 0) return b.length; // cut off: nothing more to read
  if (!own) return end;
  const after = skipSpace(b, end + 1);
  if (b[after] !== COLON) return end;
  const value = skipSpace(b, after + 1);
  const prompt = isKey(b, at + 1, end, PROMPT_KEYS);
  if (!prompt && !isKey(b, at + 1, end, COMPLETION_KEYS)) return end;
  const count = readCount(b, value);
  if (count === undefined) return end; // a count that is not a number: as if absent
  if (prompt) usage.prompt = count;
  else usage.completion = count;
  return end;
}

/** The counts in the object whose `{` is just before `start` (its own keys only, not nested ones). */
function readUsageObject(b: Uint8Array, start: number): TokenUsage | undefined {
  const usage: TokenUsage = {};
  let depth = 1;
  for (let i = start; i < b.length && depth > 0; i++) {
    const c = b[i];
    if (c === QUOTE) i = readMember(b, i, depth === 1, usage);
    else if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) depth--;
  }
  return usage.prompt === undefined && usage.completion === undefined ? undefined : usage;
}

/** The token counts of the last `usage` object within the last USAGE_WINDOW bytes of `bytes`. */
export function usageIn(bytes: Uint8Array): TokenUsage | undefined {
  const stop = Math.max(0, bytes.length - USAGE_WINDOW);
  // Only where a `g` stands can `"usage"` end three bytes later, and `g` is rare in JSON text:
  // jump between them with the native search instead of testing every byte (a 4 KB SSE tail
  // without usage cost about 7 µs byte by byte).
  for (let g = bytes.lastIndexOf(G, bytes.length - 3); g - G_AT >= stop; g = bytes.lastIndexOf(G, g - 1)) {
    const i = g - G_AT;
    if (!matchesAt(bytes, i, USAGE_KEY)) continue;
    if (i > 0 && bytes[i - 1] === BACKSLASH) continue; // `\"usage\"` inside a string
    const colon = skipSpace(bytes, i + USAGE_KEY.length);
    if (bytes[colon] !== COLON) continue; // the string "usage" as a value, not the key
    const value = skipSpace(bytes, colon + 1);
    return bytes[value] === 0x7b ? readUsageObject(bytes, value + 1) : undefined;
  }
  return undefined;
}

const KEPT = 8;

/** The last chunks of a relayed body, by reference (a chunk is never copied while it streams). */
export class ChunkTail {
  private readonly ring: (Uint8Array | undefined)[] = new Array(KEPT).fill(undefined);
  private next = 0;

  push(chunk: Uint8Array): void {
    this.ring[this.next] = chunk;
    this.next = (this.next + 1) % KEPT;
  }

  /** The body's last bytes (up to USAGE_WINDOW), joined once. */
  bytes(): Uint8Array {
    const chunks: Uint8Array[] = [];
    let size = 0;
    for (let k = 1; k <= KEPT && size < USAGE_WINDOW; k++) {
      const chunk = this.ring[(this.next - k + KEPT) % KEPT];
      if (chunk === undefined) break;
      chunks.push(chunk);
      size += chunk.byteLength;
    }
    if (chunks.length === 1) return chunks[0] as Uint8Array;
    const out = new Uint8Array(Math.min(size, USAGE_WINDOW));
    let end = out.length;
    for (const chunk of chunks) {
      const take = Math.min(chunk.byteLength, end);
      out.set(chunk.subarray(chunk.byteLength - take), end - take);
      end -= take;
      if (end === 0) break;
    }
    return out;
  }

  usage(): TokenUsage | undefined {
    return usageIn(this.bytes());
  }
}
