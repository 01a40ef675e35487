import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  analyze,
  formatOffence,
  type Offence,
  RANKS,
  readSourceTree,
  type SourceFile,
} from '../../scripts/check-architecture.ts';
import { scanImports } from '../../scripts/import-scanner.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

const file = (path: string, ...imports: string[]): SourceFile => ({
  path,
  text: `${imports.map((s, i) => `import { x${i} } from '${s}';`).join('\n')}\nexport const x = 1;\n`,
});

const kinds = (offences: Offence[]) => offences.map((o) => `${o.kind} ${o.file}:${o.line ?? '-'}`);

describe('architecture of src/', () => {
  it('the real tree has no offence (run `npm run check:architecture` for details)', () => {
    const files = readSourceTree(root);
    expect(files.length).toBeGreaterThan(50);
    expect(files.some((f) => f.path === 'src/core/router.ts')).toBe(true);
    expect(analyze(files).map(formatOffence)).toEqual([]);
  });

  it('ranks every folder present in src/core', () => {
    const folders = new Set(
      readSourceTree(root, 'src/core').map((f) => f.path.split('/').slice(2, -1)[0] ?? '.'),
    );
    for (const folder of folders) expect(RANKS, folder).toHaveProperty([folder]);
  });
});

describe('the checker catches planted offences', () => {
  it('an upward import, a sideways import, and accepts a downward and a same-folder one', () => {
    const offences = analyze([
      file('src/core/contracts/errors.ts', '../fleet/fleet.ts'),
      file('src/core/fleet/fleet.ts', '../contracts/errors.ts', './pools.ts'),
      file('src/core/fleet/pools.ts'),
      file('src/core/observability/metrics.ts', '../upstream/client.ts'),
      file('src/core/upstream/client.ts', '../config/schema.ts'),
      file('src/core/config/schema.ts'),
      file('src/core/router.ts', './http/app.ts'),
      file('src/core/http/app.ts', '../router.ts'),
    ]);
    const layer = offences.filter((o) => o.kind === 'layer');
    expect(kinds(layer)).toEqual([
      'layer src/core/contracts/errors.ts:1',
      'layer src/core/http/app.ts:1',
      'layer src/core/observability/metrics.ts:1',
    ]);
    expect(layer[0]?.message).toMatch(/^upward import of src\/core\/fleet\/fleet\.ts/);
    expect(layer[2]?.message).toMatch(/^sideways import/);
  });

  it('a cycle, reported with its path, including a type-only edge', () => {
    const offences = analyze([
      file('src/sim/a.ts', './b.ts'),
      file('src/sim/b.ts', './c.ts'),
      { path: 'src/sim/c.ts', text: "import type { A } from './a.ts';\nexport type C = A;\n" },
      file('src/sim/d.ts', './a.ts'),
    ]);
    expect(offences).toEqual([
      {
        kind: 'cycle',
        file: 'src/sim/a.ts',
        line: 1,
        message: 'import cycle: src/sim/a.ts → src/sim/b.ts → src/sim/c.ts → src/sim/a.ts',
      },
    ]);
  });

  it('a self-import and a re-export cycle', () => {
    const offences = analyze([
      file('src/adapters/node/self.ts', './self.ts'),
      { path: 'src/adapters/node/x.ts', text: "export * from './y.ts';\n" },
      { path: 'src/adapters/node/y.ts', text: "export { a } from './x.ts';\n" },
    ]);
    expect(kinds(offences)).toEqual(['cycle src/adapters/node/self.ts:1', 'cycle src/adapters/node/x.ts:1']);
  });

  it('a core file importing the adapters or the sim, even dynamically', () => {
    const offences = analyze([
      file('src/core/http/app.ts', '../../adapters/node/upstream.ts'),
      {
        path: 'src/core/routing/pick.ts',
        text: "export const load = () => import('../../sim/engine.ts');\n",
      },
      file('src/adapters/node/upstream.ts', '../../core/contracts/errors.ts'),
      file('src/sim/engine.ts', '../core/contracts/errors.ts'),
      file('src/core/contracts/errors.ts'),
    ]);
    expect(kinds(offences)).toEqual([
      'core-escape src/core/http/app.ts:1',
      'core-escape src/core/routing/pick.ts:1',
    ]);
  });

  it('an oversized file, an unranked core folder and an unresolved import', () => {
    const big: SourceFile = { path: 'src/sim/big.ts', text: 'export const a = 1;\n'.repeat(301) };
    const limit: SourceFile = { path: 'src/sim/limit.ts', text: 'export const a = 1;\n'.repeat(300) };
    const offences = analyze([big, limit, file('src/core/extras/x.ts', './missing.ts')]);
    expect(kinds(offences)).toEqual([
      'unranked src/core/extras/x.ts:-',
      'unresolved src/core/extras/x.ts:1',
      'file-length src/sim/big.ts:-',
    ]);
    expect(offences[2]?.message).toBe('301 lines (max 300): split the file');
  });
});

describe('import scanner', () => {
  it('finds every import form and ignores comments, strings and regex literals', () => {
    const text = [
      "import type { A } from './a.ts';",
      'import {',
      '  type B,',
      '  c as d,',
      "} from './b.ts';",
      "import * as e from '../e.ts';",
      "import './side.ts';",
      "export { f } from './f.ts';",
      "export type * from './g.ts';",
      "const h = await import('./h.ts');",
      "type I = typeof import('./i.ts');",
      "// import { z } from './commented.ts';",
      "/* export * from './block.ts'; */",
      'const s = "import { y } from \'./in-string.ts\'";',
      'const r = /["\']import/.test(s);',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of a template literal
      "const t = `import('./in-template.ts') ${s}`;",
      'table.import(x);',
      "const u = 'http://example.com'; import { w } from './after-url.ts';",
    ].join('\n');
    expect(
      scanImports(text).map((r) => `${r.line} ${r.kind}${r.typeOnly ? ' type' : ''} ${r.specifier}`),
    ).toEqual([
      '1 static type ./a.ts',
      '2 static ./b.ts',
      '6 static ../e.ts',
      '7 side-effect ./side.ts',
      '8 re-export ./f.ts',
      '9 re-export type ./g.ts',
      '10 dynamic ./h.ts',
      '11 dynamic type ./i.ts',
      '18 static ./after-url.ts',
    ]);
  });
});
