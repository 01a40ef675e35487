// Bundles the Node entry point into dist/node/main.js (Node 20 cannot run .ts directly).
import { build } from 'esbuild';

await build({
  entryPoints: { main: 'src/adapters/node/main.ts', sim: 'src/sim/cli.ts' },
  outdir: 'dist/node',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  sourcemap: true,
  logLevel: 'warning',
});
