// /v1/embeddings: deterministic unit vectors derived from the input text.
import { chainedBlockHash } from './cache.ts';
import type { JsonObject } from './openai-format.ts';
import { seededRandom } from './plan.ts';

const DEFAULT_DIMENSIONS = 16;
const MAX_DIMENSIONS = 4096;

export function embeddingInputs(input: unknown): string[] | null {
  if (typeof input === 'string') return [input];
  if (!Array.isArray(input) || input.length === 0) return null;
  if (input.every((x) => typeof x === 'number')) return [JSON.stringify(input)];
  const out: string[] = [];
  for (const x of input) {
    if (typeof x === 'string') out.push(x);
    else if (Array.isArray(x)) out.push(JSON.stringify(x));
    else return null;
  }
  return out;
}

export function embeddingVector(text: string, dimensions: number): number[] {
  const random = seededRandom(chainedBlockHash(text, 0, text.length, 0) % 4294967296);
  const v: number[] = [];
  let norm = 0;
  for (let i = 0; i < dimensions; i++) {
    const x = random() * 2 - 1;
    v.push(x);
    norm += x * x;
  }
  const scale = norm > 0 ? 1 / Math.sqrt(norm) : 0;
  return v.map((x) => Math.fround(x * scale));
}

/** Little-endian float32 bytes, base64 (what `encoding_format: "base64"` returns). */
export function float32Base64(v: number[]): string {
  const bytes = new Uint8Array(v.length * 4);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < v.length; i++) view.setFloat32(i * 4, v[i]!, true);
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin);
}

export function embeddingsJson(
  body: JsonObject,
  inputs: string[],
  id: string,
  created: number,
  model: string,
): JsonObject {
  const requested = Number(body.dimensions);
  const dims =
    Number.isInteger(requested) && requested > 0 ? Math.min(requested, MAX_DIMENSIONS) : DEFAULT_DIMENSIONS;
  const base64 = body.encoding_format === 'base64';
  let tokens = 0;
  const data = inputs.map((text, index) => {
    tokens += Math.max(1, Math.ceil(text.length / 4));
    const v = embeddingVector(text, dims);
    return { index, object: 'embedding', embedding: base64 ? float32Base64(v) : v };
  });
  return {
    id,
    object: 'list',
    created,
    model,
    data,
    usage: { prompt_tokens: tokens, total_tokens: tokens, completion_tokens: 0, prompt_tokens_details: null },
  };
}
