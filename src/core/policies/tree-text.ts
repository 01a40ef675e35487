/**
 * A routing text as the prefix tree reads it: forward, part by part, without joining the parts.
 * A walk only moves forward, so the reader keeps its place (the part holding the last position
 * read) and each part is found once per walk.
 */
import { type RoutingText, textLength, textParts } from '../contracts/routing-text.ts';
import { commonLength, ownCopy } from './tree-labels.ts';

export class TextReader {
  readonly length: number;
  private readonly parts: readonly string[];
  /** The part holding the position last read, and where that part starts in the text. */
  private part = 0;
  private start = 0;

  constructor(text: RoutingText) {
    this.parts = textParts(text);
    this.length = textLength(text);
  }

  /** The part holding `pos` (0 <= pos < length, never less than a position read before). */
  private seek(pos: number): string {
    let p = this.parts[this.part] as string;
    while (pos >= this.start + p.length) {
      this.start += p.length;
      p = this.parts[++this.part] as string;
    }
    return p;
  }

  /** The code unit at `pos` (< length). */
  codeAt(pos: number): number {
    return this.seek(pos).charCodeAt(pos - this.start);
  }

  /** Length of the common prefix of `label` and the text from `pos` (< length). */
  common(label: string, pos: number): number {
    let done = 0;
    while (done < label.length && pos + done < this.length) {
      const p = this.seek(pos + done);
      const off = pos + done - this.start;
      const max = Math.min(label.length - done, p.length - off);
      const n = commonLength(label, done, p, off, max);
      done += n;
      if (n < max) break;
    }
    return done;
  }

  /** The text from `pos` (< length) to its end, as a string of its own: a new leaf's label. */
  rest(pos: number): string {
    const p = this.seek(pos);
    const first = p.slice(pos - this.start);
    if (this.part === this.parts.length - 1) return ownCopy(first);
    // A join of two or more non-empty strings is a new flat string; of one, that string (a view).
    const joined = [first, ...this.parts.slice(this.part + 1)].join('');
    return joined.length === first.length ? ownCopy(first) : joined;
  }
}
