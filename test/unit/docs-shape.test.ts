import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The repository's prose stays prose: an editing slip that repeats a passage (or a whole paragraph
 * between every character, as a replace with an empty pattern does) is caught here, before it lands.
 */
const ROOT = join(import.meta.dirname, '..', '..');
const DOCS = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => join('docs', f)),
];
const MAX_BYTES = 512 * 1024;
const MIN_PARAGRAPH = 200;

/** Paragraphs of at least MIN_PARAGRAPH characters that appear more than once in `text`. */
function repeatedParagraphs(text: string): string[] {
  const seen = new Set<string>();
  const repeated = new Set<string>();
  for (const paragraph of text.split(/\n\s*\n/)) {
    const p = paragraph.trim();
    if (p.length < MIN_PARAGRAPH) continue;
    if (seen.has(p)) repeated.add(p);
    seen.add(p);
  }
  return [...repeated];
}

describe('documentation files', () => {
  it.each(DOCS)('%s stays under 512 KB', (file) => {
    expect(statSync(join(ROOT, file)).size).toBeLessThan(MAX_BYTES);
  });

  it.each(DOCS)('%s repeats no paragraph', (file) => {
    const repeats = repeatedParagraphs(readFileSync(join(ROOT, file), 'utf8'));
    expect(repeats.map((p) => p.slice(0, 80))).toEqual([]);
  });

  it('finds the paragraph an empty-pattern replace spreads through a text', () => {
    const paragraph = `${'A passage about the sequential repeats of the bench. '.repeat(5)}\n\n`;
    const spread = 'Title\n\nBody.'.split('').join(paragraph);
    expect(repeatedParagraphs(spread).length).toBeGreaterThan(0);
    expect(repeatedParagraphs(`Title\n\n${paragraph}Body.`)).toEqual([]);
  });
});
