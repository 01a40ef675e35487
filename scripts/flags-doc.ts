/**
 * Regenerates the flag reference in README.md (between `<!-- flags:start -->` and
 * `<!-- flags:end -->`) from the flag table and the schema defaults.
 *
 *   npx tsx scripts/flags-doc.ts           rewrite README.md
 *   npx tsx scripts/flags-doc.ts --check   exit 1 if README.md is out of date
 *
 * Without README.md or its markers, the reference is printed to stdout instead.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderFlagReference } from '../src/core/config/help.ts';

const START = '<!-- flags:start -->';
const END = '<!-- flags:end -->';
const readme = fileURLToPath(new URL('../README.md', import.meta.url));
const reference = renderFlagReference();
const check = process.argv.includes('--check');

const text = existsSync(readme) ? readFileSync(readme, 'utf8') : undefined;
const start = text?.indexOf(START) ?? -1;
const end = text?.indexOf(END, start) ?? -1;

if (text === undefined || start < 0 || end < 0) {
  process.stderr.write(`README.md or its ${START} / ${END} markers are missing: printing the reference.\n`);
  process.stdout.write(`${reference}\n`);
  process.exit(0);
}

const updated = `${text.slice(0, start + START.length)}\n\n${reference}\n\n${text.slice(end)}`;
if (check) {
  if (updated !== text) {
    process.stderr.write('README.md flag reference is out of date: run npx tsx scripts/flags-doc.ts\n');
    process.exit(1);
  }
  process.stdout.write('README.md flag reference is up to date.\n');
} else if (updated !== text) {
  writeFileSync(readme, updated);
  process.stdout.write('README.md flag reference updated.\n');
} else {
  process.stdout.write('README.md flag reference already up to date.\n');
}
