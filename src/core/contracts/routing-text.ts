/**
 * A request's routing text (what content-aware policies read): one string, or its parts in order.
 * The router keeps the parts it read from the request (the role labels and message texts of a chat,
 * say) and never joins them on the hot path: joining copies the whole prompt (about 1.5 µs per 8 KB
 * on V8), and the prefix tree reads the parts in place. Whoever needs one string joins them.
 */
export type RoutingText = string | readonly string[];

/** The text's parts (a single string is one part). */
export function textParts(text: RoutingText): readonly string[] {
  return typeof text === 'string' ? [text] : text;
}

export function textLength(text: RoutingText): number {
  if (typeof text === 'string') return text.length;
  let n = 0;
  for (const part of text) n += part.length;
  return n;
}

/** The text as one string. */
export function joinText(text: RoutingText): string {
  return typeof text === 'string' ? text : text.join('');
}

/** The first `max` characters of the text (the text itself when it is no longer). */
export function textPrefix(text: RoutingText, max: number): RoutingText {
  if (typeof text === 'string') return text.length > max ? text.slice(0, max) : text;
  const out: string[] = [];
  let left = max;
  for (const part of text) {
    if (left <= 0) break;
    out.push(part.length > left ? part.slice(0, left) : part);
    left -= part.length;
  }
  return left >= 0 && out.length === text.length ? text : out;
}
