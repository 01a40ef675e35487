/**
 * The routing text, built from a request's parts up to a cap, so that a huge prompt is never
 * copied whole: parts past the cap are cut (a slice), and the joined text owns its characters.
 */

/** Characters of routing text read from a request: about a million tokens, past any context window. */
export const MAX_ROUTING_TEXT_CHARS = 4 * 1024 * 1024;

export class CappedText {
  private readonly parts: string[] = [];
  private left: number;
  private cut = false;

  constructor(cap: number = MAX_ROUTING_TEXT_CHARS) {
    this.left = cap;
  }

  /** Characters that may still be added. */
  get room(): number {
    return this.left;
  }

  add(...texts: string[]): void {
    for (const t of texts) {
      if (this.left <= 0) {
        this.cut ||= t.length > 0;
        return;
      }
      if (t.length > this.left) {
        this.parts.push(t.slice(0, this.left));
        this.left = 0;
        this.cut = true;
      } else {
        this.parts.push(t);
        this.left -= t.length;
      }
    }
  }

  /** The text; when it was cut, a copy that does not keep the request's strings alive. */
  text(): string {
    const s = this.parts.join('');
    return this.cut && this.parts.length === 1 ? ` ${s}`.slice(1) : s;
  }
}
