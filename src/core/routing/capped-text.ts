/**
 * The routing text, gathered from a request's parts up to a cap, so that a huge prompt is never
 * copied whole: a part crossing the cap is cut (a slice, a view of the request's string), parts past
 * it are dropped, and nothing is joined (routing-text.ts). Whatever outlives the request copies
 * what it keeps (the prefix tree's labels do).
 */
import type { RoutingText } from '../contracts/routing-text.ts';

/** Characters of routing text read from a request: about a million tokens, past any context window. */
export const MAX_ROUTING_TEXT_CHARS = 4 * 1024 * 1024;

export class CappedText {
  private readonly parts: string[] = [];
  private left: number;

  constructor(cap: number = MAX_ROUTING_TEXT_CHARS) {
    this.left = cap;
  }

  /** Characters that may still be added. */
  get room(): number {
    return this.left;
  }

  add(...texts: string[]): void {
    for (const t of texts) {
      if (this.left <= 0) return;
      if (t.length === 0) continue;
      if (t.length > this.left) {
        this.parts.push(t.slice(0, this.left));
        this.left = 0;
      } else {
        this.parts.push(t);
        this.left -= t.length;
      }
    }
  }

  get empty(): boolean {
    return this.parts.length === 0;
  }

  /** The text as its parts (never empty strings), unjoined: what the policies read. */
  value(): RoutingText {
    return this.parts.length === 1 ? (this.parts[0] as string) : this.parts;
  }

  /** The text as one string. */
  text(): string {
    return this.parts.join('');
  }
}
