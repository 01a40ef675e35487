/**
 * Tests of the Cloudflare Workers adapter, two projects:
 * - workerd: inside the Workers runtime via @cloudflare/vitest-pool-workers; the Worker and its
 *   FleetObject run as wrangler.toml describes them, with ROUTER_CONFIG pointing at simulated
 *   engines that global-setup.ts starts in Node on loopback.
 * - workerd-http: Node tests driving the bundled Worker in Miniflare (workerd) over real HTTP,
 *   for what the in-process SELF binding cannot show (a client that disconnects).
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';
import { routerConfig } from './test/runtime/workerd/router-config.ts';

// Wrangler (bundled with the pool, and the one the Miniflare tests read wrangler.toml with) sends
// no telemetry and writes its logs outside the home directory. Set before wrangler is loaded:
// hence the dynamic import below.
process.env.WRANGLER_SEND_METRICS ??= 'false';
process.env.XDG_CONFIG_HOME ??= join(tmpdir(), 'vllm-edge-router-wrangler');
const { cloudflareTest } = await import('@cloudflare/vitest-pool-workers');

export default defineConfig({
  test: {
    projects: [
      {
        plugins: [
          cloudflareTest(({ inject }) => ({
            wrangler: { configPath: './wrangler.toml' },
            miniflare: {
              bindings: {
                ROUTER_CONFIG: JSON.stringify(routerConfig(inject('engines'))),
                // The same value as ADMIN_KEY in test/runtime/workerd/helpers.ts.
                ADMIN_API_KEY: 'workerd-test-admin-key',
              },
            },
          })),
        ],
        test: {
          name: 'workerd',
          include: ['test/runtime/workerd/**/*.test.ts'],
          exclude: ['test/runtime/workerd/**/*.node.test.ts'],
          globalSetup: ['test/runtime/workerd/global-setup.ts'],
          testTimeout: 15_000,
          hookTimeout: 15_000,
        },
      },
      {
        test: {
          name: 'workerd-http',
          include: ['test/runtime/workerd/**/*.node.test.ts'],
          testTimeout: 15_000,
          hookTimeout: 30_000,
        },
      },
    ],
  },
});
