import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { renderFlagReference } from '../../../src/core/config/help.ts';

const README = fileURLToPath(new URL('../../../README.md', import.meta.url));
const START = '<!-- flags:start -->';
const END = '<!-- flags:end -->';

describe('README.md flag reference', () => {
  it('is exactly renderFlagReference() between the markers (regenerate: npx tsx scripts/flags-doc.ts)', () => {
    expect(existsSync(README), 'README.md is missing').toBe(true);
    const text = readFileSync(README, 'utf8');
    const start = text.indexOf(START);
    const end = text.indexOf(END);
    expect(start, `README.md has no ${START} marker`).toBeGreaterThanOrEqual(0);
    expect(end, `README.md has no ${END} marker after ${START}`).toBeGreaterThan(start);
    expect(text.indexOf(START, start + 1), `README.md has more than one ${START}`).toBe(-1);
    expect(text.slice(start + START.length, end).trim()).toBe(renderFlagReference().trim());
  });
});
