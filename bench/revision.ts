/** A git revision of the router built beside the working tree, for the A/B benches. */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The revision built in a temporary worktree sharing this checkout's node_modules. */
export function buildRevision(rev: string): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'bench-ab-'));
  execFileSync('git', ['worktree', 'add', '--detach', dir, rev], { cwd: ROOT, stdio: 'ignore' });
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: dir, stdio: 'inherit' });
  return {
    dir,
    remove: () => {
      execFileSync('git', ['worktree', 'remove', '--force', dir], { cwd: ROOT, stdio: 'ignore' });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
