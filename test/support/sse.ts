/** SSE helpers for tests (no Node APIs: also imported by the workerd tests). */

/** True once a complete SSE event carries a non-empty content delta. */
export function hasContentToken(text: string): boolean {
  return text
    .split('\n\n')
    .slice(0, -1)
    .some((event) => {
      if (!event.startsWith('data: {')) return false;
      const chunk = JSON.parse(event.slice(6)) as { choices?: { delta?: { content?: string } }[] };
      return (chunk.choices?.[0]?.delta?.content ?? '') !== '';
    });
}
