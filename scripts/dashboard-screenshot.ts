/**
 * Regenerates docs/dashboard.png (`npm run docs:screenshot`): a router on loopback in front of four
 * simulated engines (one of them answering 503 until its breaker opens), a few seconds
 * of mixed streaming and plain chat traffic, and the live fleet page in headless Chromium at
 * 1366×768 while the traffic goes on. Needs /usr/bin/chromium (`apt-get install -y chromium`).
 */
import { mkdir } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startNodeRouter } from '../src/adapters/node/server.ts';
import { parseRouterConfig } from '../src/core/config/schema.ts';
import { startSimEngine } from '../src/sim/node.ts';
import { CHROMIUM, hasChromium, launchChromium } from '../test/browser/chromium.ts';

const OUT = resolve(dirname(fileURLToPath(import.meta.url)), '../docs/dashboard.png');
const TRAFFIC_MS = 7_000;
const CONCURRENCY = 6;

const SYSTEM_PROMPTS = [
  'You are the support assistant of a mountain railway. Answer in at most three sentences.',
  'You translate product descriptions into plain English for a hardware catalogue.',
  'You are a code reviewer. Point out bugs first, then style, and keep it short.',
  'You summarise meeting notes into a list of decisions and a list of open questions.',
  'You answer questions about the opening hours and services of a public library.',
  'You help travellers plan train journeys across Switzerland, with changes and times.',
  'You explain error messages of a build tool and suggest the most likely fix.',
  'You write short, friendly replies to customer reviews of a small bakery.',
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  if (!hasChromium()) {
    console.error(`${CHROMIUM} is missing: install it with \`apt-get install -y chromium\``);
    process.exit(1);
  }
  const engines = await Promise.all(
    [
      { ttftMs: 35, itlMs: 6 },
      { ttftMs: 40, itlMs: 7 },
      { ttftMs: 90, itlMs: 12 },
      { ttftMs: 35, itlMs: 6, failure: { mode: 'status' as const, status: 503 } },
    ].map((o, i) =>
      startSimEngine({ id: `engine-${i}`, tokens: 24, host: '127.0.0.1', port: 0, logSize: 0, ...o }),
    ),
  );
  const router = await startNodeRouter(
    parseRouterConfig({
      server: { host: '127.0.0.1', port: 0 },
      workers: { urls: engines.map((e) => e.url) },
      circuitBreaker: { failureThreshold: 4, timeoutDurationSecs: 60 },
      log: { level: 'error' },
    }),
    { logSink: () => {}, metricsListener: false },
  );
  let running = true;
  let n = 0;
  const client = async () => {
    while (running) {
      const i = n++;
      const res = await fetch(`${router.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'sim-model',
          stream: i % 5 !== 0,
          messages: [
            { role: 'system', content: SYSTEM_PROMPTS[i % SYSTEM_PROMPTS.length] },
            { role: 'user', content: `Question number ${i % 40}` },
          ],
        }),
      });
      await res.text();
    }
  };
  const clients = Array.from({ length: CONCURRENCY }, client);
  const browser = await launchChromium();
  try {
    const page = await browser.context.newPage();
    await page.goto(`${router.url}/dashboard`);
    await sleep(TRAFFIC_MS);
    await mkdir(dirname(OUT), { recursive: true });
    await page.screenshot({ path: OUT });
    console.log(`wrote ${OUT}`);
  } finally {
    running = false;
    await Promise.all(clients);
    await browser.close();
    await router.close(0);
    await Promise.all(engines.map((e) => e.close()));
  }
}

await main();
