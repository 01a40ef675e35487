/**
 * What the packaging promises, read from the files themselves (Docker cannot run here): the
 * Dockerfile (Node LTS, a build stage and a runtime stage with production dependencies only, tini
 * as PID 1, listen addresses from the environment so `docker run IMAGE --flags` keeps them, a
 * /liveness health check, the non-root user), the scripts that do and do not start the demo, the
 * LICENSE, and wrangler.toml's deploy settings.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/core/config/load.ts';
import {
  type DockerInstruction,
  dockerfileEnv,
  dockerRunArgv,
  parseDockerfile,
} from '../runtime/dockerfile.ts';

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

describe('the Dockerfile', () => {
  const stages = parseDockerfile(read('Dockerfile'));
  const build = stages[0] ?? [];
  const runtime = stages.at(-1) ?? [];
  const runs = (stage: DockerInstruction[]) =>
    stage
      .filter((i) => i.op === 'RUN')
      .map((i) => i.args)
      .join(' && ');

  it('builds on a current Node LTS slim image in two stages', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    for (const stage of [build, runtime]) expect(stage[0]?.args).toMatch(/^node:(22|24)-slim\b/);
    expect(build[0]?.args).toMatch(/ AS build$/i);
  });

  it('build stage: every dependency (npm ci), then npm run build', () => {
    expect(runs(build)).toMatch(/npm ci(?![^&]*--omit=dev)/);
    expect(runs(build)).toContain('npm run build');
  });

  it('runtime stage: production dependencies only, dist/ and package.json, no sources', () => {
    expect(runs(runtime)).toContain('npm ci --omit=dev');
    const copies = runtime.filter((i) => i.op === 'COPY').map((i) => i.args);
    expect(copies).toContain('--from=build /app/dist ./dist');
    expect(copies.some((c) => /^package\.json\b/.test(c))).toBe(true);
    expect(copies.some((c) => /\bsrc\b|node_modules/.test(c))).toBe(false);
  });

  it('runs tini (installed with apt) as PID 1 in front of the router', () => {
    expect(runs(runtime)).toMatch(/apt-get install -y --no-install-recommends tini/);
    const argv = dockerRunArgv(runtime, []);
    expect(argv.slice(0, 2)).toEqual(['tini', '--']);
    expect(argv.slice(2, 4)).toEqual(['node', 'dist/node/main.js']);
  });

  it('`docker run IMAGE --worker-urls ...` appends router flags and keeps the listen address', () => {
    const argv = dockerRunArgv(runtime, ['--worker-urls', 'http://engine-1:8000']);
    expect(argv).toEqual([
      'tini',
      '--',
      'node',
      'dist/node/main.js',
      '--worker-urls',
      'http://engine-1:8000',
    ]);
    for (const op of ['CMD', 'ENTRYPOINT']) {
      for (const i of runtime.filter((x) => x.op === op))
        expect(i.args).not.toMatch(/--host|--prometheus-host/);
    }
  });

  it('sets the listen addresses in the environment, as variables the router reads', () => {
    const env = dockerfileEnv();
    expect(env).toMatchObject({ VLLM_ROUTER_HOST: '0.0.0.0', VLLM_ROUTER_PROMETHEUS_HOST: '0.0.0.0' });
    const resolved = resolveConfig({
      argv: ['--worker-urls', 'http://engine-1:8000'],
      env,
      readTextFile: () => '',
    });
    expect(resolved.config.server.host).toBe('0.0.0.0');
    expect(resolved.config.metrics.host).toBe('0.0.0.0');
    expect(resolved.warnings).toEqual([]);
  });

  it('checks /liveness with node (slim has no curl), exposes both ports, runs as the node user', () => {
    const healthcheck = runtime.find((i) => i.op === 'HEALTHCHECK')?.args ?? '';
    expect(healthcheck).toContain('/liveness');
    expect(healthcheck).toMatch(/CMD \["node", "-e"/);
    expect(healthcheck).not.toContain('curl');
    expect(runtime.find((i) => i.op === 'EXPOSE')?.args).toBe('30000 29000');
    expect(runtime.filter((i) => i.op === 'USER').at(-1)?.args).toBe('node');
  });

  it('.dockerignore keeps local builds, dependencies and secrets out of the context', () => {
    const ignored = read('.dockerignore').split('\n');
    for (const entry of ['node_modules', 'dist', '.git', '.env']) expect(ignored).toContain(entry);
  });
});

describe('who starts the demo engines', () => {
  const pkg = JSON.parse(read('package.json')) as {
    scripts: Record<string, string>;
    bin: Record<string, string>;
  };

  it('npm start builds, then passes --demo (the README first command works with no setup)', () => {
    expect(pkg.scripts.prestart).toBe('node scripts/build.mjs');
    expect(pkg.scripts.start).toBe('node dist/node/main.js --demo');
  });

  it('the installed bin runs the router with its own flags only', () => {
    const bin = read(pkg.bin['vllm-edge-router'] as string);
    expect(bin).toContain("import '../dist/node/main.js';");
    expect(bin.replace(/^\/\/.*$/gm, '')).not.toContain('--demo');
  });

  it('deno task start passes no --demo', () => {
    const deno = JSON.parse(read('deno.json')) as { tasks: Record<string, string> };
    expect(deno.tasks.start).toContain('src/adapters/deno/main.ts');
    expect(deno.tasks.start).not.toContain('--demo');
  });
});

describe('LICENSE', () => {
  it('is the Apache License 2.0 that package.json names, with the copyright line', () => {
    const pkg = JSON.parse(read('package.json')) as { license: string };
    expect(pkg.license).toBe('Apache-2.0');
    const text = read('LICENSE');
    expect(text).toMatch(
      /^\s*Apache License\s+Version 2\.0, January 2004\s+http:\/\/www\.apache\.org\/licenses\//,
    );
    expect(text).toContain('TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION');
    for (let n = 1; n <= 9; n++) expect(text).toMatch(new RegExp(`\\n {3}${n}\\. [A-Z]`));
    expect(text).toContain('END OF TERMS AND CONDITIONS');
    expect(text).toContain('Copyright 2026 the vllm-edge-router authors');
  });
});

describe('wrangler.toml', () => {
  const lines = read('wrangler.toml').split('\n');
  const active = lines.filter((l) => !l.trim().startsWith('#') && l.trim() !== '');
  const topLevel = active.slice(
    0,
    active.findIndex((l) => l.trim().startsWith('[')),
  );

  it('deploys to no workers.dev URL unless the operator opts in (a top-level setting)', () => {
    expect(topLevel).toContain('workers_dev = false');
    expect(lines.some((l) => /^#\s*workers_dev = true/.test(l))).toBe(true);
  });

  it('configures no loopback engine (placeholders stay commented out)', () => {
    expect(active.join('\n')).not.toMatch(/127\.0\.0\.1|localhost|\[::1\]/);
    expect(active.join('\n')).not.toContain('ROUTER_CONFIG');
    expect(lines.some((l) => l.startsWith('#') && l.includes('https://vllm-0.example.internal:8000'))).toBe(
      true,
    );
  });

  it('says admin routes need the ADMIN_API_KEY secret', () => {
    expect(lines.some((l) => l.startsWith('#') && l.includes('wrangler secret put ADMIN_API_KEY'))).toBe(
      true,
    );
  });
});
