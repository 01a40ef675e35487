/**
 * V8's sampling CPU profile of two proxies under the same load, compared function by function:
 * start each with `profileFlags(dir)` (Node writes the profile into `dir` when the process exits),
 * stop them, then `profileDiff` lists the functions whose own time (self time, inlined callees
 * included) differs most between the two, in µs per request. Idle samples are left out; the
 * sampler itself costs some CPU, so the figures are for comparing, not absolute.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** One sample every 200 µs: about 5,000 per second of busy time. */
export const profileFlags = (dir: string) => [
  '--cpu-prof',
  `--cpu-prof-dir=${dir}`,
  '--cpu-prof-interval=200',
];

interface Profile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  samples: number[];
  timeDeltas: number[];
}

/** Self time per function (µs, summed over the run), keyed by name, file and line. */
function selfTimes(dir: string): Map<string, number> {
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no CPU profile in ${dir} (did the process exit normally?)`);
  const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Profile;
  const keyOf = new Map<number, string>();
  for (const { id, callFrame: f } of profile.nodes) {
    const where = f.url === '' ? '' : ` ${f.url.split('/').slice(-2).join('/')}:${f.lineNumber + 1}`;
    keyOf.set(id, `${f.functionName || '(anonymous)'}${where}`);
  }
  const out = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    const key = keyOf.get(id) as string;
    out.set(key, (out.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  out.delete('(idle)');
  return out;
}

const total = (m: Map<string, number>) => [...m.values()].reduce((x, y) => x + y, 0);

/** A table of the `top` functions whose self time per request differs most between A and B. */
export function profileDiff(dirA: string, dirB: string, names: [string, string], requests: number, top = 20) {
  const [a, b] = [selfTimes(dirA), selfTimes(dirB)];
  const per = (m: Map<string, number>, k: string) => (m.get(k) ?? 0) / requests;
  const keys = [...new Set([...a.keys(), ...b.keys()])];
  keys.sort((x, y) => Math.abs(per(a, y) - per(b, y)) - Math.abs(per(a, x) - per(b, x)));
  const lines = [
    `| function | ${names[0]} µs/request | ${names[1]} µs/request | difference |`,
    '|---|---:|---:|---:|',
    `| all busy samples | ${(total(a) / requests).toFixed(1)} | ${(total(b) / requests).toFixed(1)} | ${((total(a) - total(b)) / requests).toFixed(1)} |`,
  ];
  for (const k of keys.slice(0, top)) {
    const cells = [per(a, k), per(b, k), per(a, k) - per(b, k)].map((v) => v.toFixed(2));
    lines.push(`| \`${k}\` | ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}
