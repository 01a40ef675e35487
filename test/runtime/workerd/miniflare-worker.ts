/**
 * Node side: the Worker as wrangler.toml describes it (bindings, Durable Object with SQLite,
 * compatibility date and flags), bundled with esbuild and served by Miniflare (workerd) on a real
 * loopback port. Used where a real HTTP client matters (a client disconnect) and by
 * bench/worker.ts. Not `wrangler dev`: its proxy layer costs about 10x.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { Miniflare, type MiniflareOptions } from 'miniflare';

const root = fileURLToPath(new URL('../../../', import.meta.url));

/** The Worker bundle, as `wrangler deploy` would build it (ESM, workerd conditions). */
export async function bundleWorker(): Promise<string> {
  const result = await build({
    entryPoints: [`${root}src/adapters/cloudflare/worker.ts`],
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    conditions: ['workerd', 'worker', 'browser'],
    mainFields: ['module', 'main'],
    external: ['cloudflare:*'],
    write: false,
    logLevel: 'warning',
  });
  return result.outputFiles[0]?.text ?? '';
}

export interface MiniflareWorker {
  url: string;
  miniflare: Miniflare;
  dispose(): Promise<void>;
}

export async function startMiniflareWorker(options: {
  routerConfig: object;
  script?: string;
  /** The ADMIN_API_KEY secret (without it the Worker's admin API is off). */
  adminKey?: string;
  /** Extra Miniflare options (e.g. handleRuntimeStdio). */
  miniflare?: Partial<MiniflareOptions>;
}): Promise<MiniflareWorker> {
  // Wrangler reads wrangler.toml for us; no telemetry, and its logs outside the home directory
  // (set before wrangler is loaded).
  process.env.WRANGLER_SEND_METRICS ??= 'false';
  process.env.XDG_CONFIG_HOME ??= join(tmpdir(), 'vllm-edge-router-wrangler');
  const { unstable_getMiniflareWorkerOptions } = await import('wrangler');
  const { workerOptions } = unstable_getMiniflareWorkerOptions(`${root}wrangler.toml`);
  const { modulesRules: _rules, bindings, ...rest } = workerOptions;
  const miniflare = new Miniflare({
    ...rest,
    modules: [{ type: 'ESModule', path: 'worker.js', contents: options.script ?? (await bundleWorker()) }],
    bindings: {
      ...bindings,
      ROUTER_CONFIG: JSON.stringify(options.routerConfig),
      ...(options.adminKey ? { ADMIN_API_KEY: options.adminKey } : {}),
    },
    host: '127.0.0.1',
    port: 0,
    ...options.miniflare,
  } as MiniflareOptions);
  const url = (await miniflare.ready).href.replace(/\/$/, '');
  return { url, miniflare, dispose: () => miniflare.dispose() };
}
