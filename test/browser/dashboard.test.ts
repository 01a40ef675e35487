/**
 * The live fleet page in a real headless Chromium (Debian's package, driven by playwright-core)
 * against a real router on loopback with simulated engines: the page loads without console errors
 * or failed requests, shows every worker, reflects a breaker opening (an engine answering real 500s)
 * and a worker drained through the API within seconds, and its own actions work (drain a worker,
 * add one; checked through the admin API). With --admin-api-key the page asks for the key and
 * sends it. Every wait is a bounded poll of the DOM or of the API.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Running, type RunningEngine, startEngines, startStack } from '../support/harness.ts';
import { CHROMIUM, type Chromium, hasChromium, launchChromium } from './chromium.ts';

const available = hasChromium();
if (!available) {
  console.warn(
    `\n*** test/browser/dashboard.test.ts SKIPPED: ${CHROMIUM} is missing. ` +
      'Install it with `apt-get install -y chromium` to run the browser tests. ***\n',
  );
}
const suite = available ? describe : describe.skip;

const WAIT = { timeout: 8_000, interval: 100 };

const row = (page: Page, id: string) => page.locator(`#workers tbody tr[data-worker="${id}"]`);
const cell = (page: Page, id: string, col: string) => row(page, id).locator(`td[data-col="${col}"]`);
const text = async (page: Page, selector: string) => (await page.locator(selector).textContent()) ?? '';
const eventsText = (page: Page) => text(page, '#events tbody');

async function chat(router: string, init: { stream?: boolean; signal?: AbortSignal } = {}) {
  return fetch(`${router}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'sim-model',
      stream: init.stream === true,
      messages: [{ role: 'user', content: 'Hello' }],
    }),
    ...(init.signal ? { signal: init.signal } : {}),
  });
}

const configure = (engine: RunningEngine, settings: Record<string, unknown>) =>
  fetch(`${engine.url}/admin/config`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(settings),
  }).then((r) => expect(r.status).toBe(200));

async function apiWorker(router: string, id: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${router}/workers/${encodeURIComponent(id)}`, { headers });
  return res.status === 200 ? ((await res.json()) as { circuit: string; draining: boolean }) : undefined;
}

/** Adds up the page's layout shifts (the Layout Instability API) in `window.layoutShift`. */
const LAYOUT_SHIFTS = `
  window.layoutShift = 0;
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) window.layoutShift += entry.value;
  }).observe({ type: 'layout-shift', buffered: true });
`;
const layoutShift = (page: Page) =>
  page.evaluate(() => (window as unknown as { layoutShift: number }).layoutShift);

/** Records what a page should never show: console errors, uncaught errors, failed requests. */
function watch(page: Page) {
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) =>
    problems.push(`failed: ${r.method()} ${r.url()} ${r.failure()?.errorText}`),
  );
  page.on('response', (r) => {
    if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.request().method()} ${r.url()}`);
  });
  return problems;
}

suite('the live fleet page in Chromium', () => {
  let stack: Running;
  let spare: RunningEngine;
  let browser: Chromium;
  let page: Page;
  let problems: string[];
  let ids: string[];

  beforeAll(async () => {
    let spares: RunningEngine[];
    [stack, spares, browser] = await Promise.all([
      startStack({
        engines: 3,
        engineOptions: { tokens: 8 },
        config: { circuitBreaker: { failureThreshold: 3, timeoutDurationSecs: 30 } },
      }),
      startEngines(1),
      launchChromium(),
    ]);
    spare = spares[0]!;
    ids = stack.engines.map((e) => e.url);
    page = await browser.context.newPage();
    problems = watch(page);
    await page.addInitScript(LAYOUT_SHIFTS);
    const res = await page.goto(`${stack.router.url}/dashboard`);
    expect(res?.status()).toBe(200);
  });

  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
    await spare?.close();
  });

  it('shows every worker, the policy and the router', async () => {
    for (const id of ids) {
      await expect.poll(() => cell(page, id, 'health').textContent(), WAIT).toBe('healthy');
      expect(await cell(page, id, 'breaker').textContent()).toBe('closed');
      expect(await cell(page, id, 'models').textContent()).toBe('sim-model');
      expect(await cell(page, id, 'role').textContent()).toBe('regular');
    }
    expect(await text(page, '#policy')).toBe('policy: round_robin');
    expect(await text(page, '#r-healthy')).toBe('3 / 3');
  });

  it('reflects traffic and a breaker opening on an engine answering 500', async () => {
    const failing = ids[2]!;
    const shiftBefore = await layoutShift(page);
    await configure(stack.engines[2]!, { 'fail-mode': 'status', 'fail-status': 500 });
    for (let i = 0; i < 30 && (await apiWorker(stack.router.url, failing))?.circuit !== 'open'; i++) {
      const res = await chat(stack.router.url);
      expect(res.status).toBe(200); // retried on a healthy engine
      await res.text();
    }
    expect((await apiWorker(stack.router.url, failing))?.circuit).toBe('open');
    await expect
      .poll(() => cell(page, failing, 'breaker').textContent(), WAIT)
      .toMatch(/^open · probe in \d+ s$/);
    await expect.poll(() => eventsText(page), WAIT).toContain('circuit closed → open');
    expect(await eventsText(page)).toContain('retried, 2 attempts, answered 200');
    expect(Number(await text(page, '#r-rate'))).toBeGreaterThan(0);
    expect(await cell(page, ids[0]!, 'latency').textContent()).toMatch(/^[\d.]+( s)? \/ [\d.]+( s)?$/);
    // Numbers, states and events changed; nothing on the page moved.
    expect(await layoutShift(page)).toBe(shiftBefore);
  });

  it('reflects a worker drained through the API while a stream is in flight', async () => {
    const slow = ids[1]!;
    await configure(stack.engines[1]!, { 'itl-ms': 200, tokens: 100 });
    const cancel = new AbortController();
    let held: Response | undefined;
    for (let i = 0; i < 6 && !held; i++) {
      const res = await chat(stack.router.url, { stream: true, signal: cancel.signal });
      if (res.headers.get('x-routed-worker-id') === slow) held = res;
      else await res.text();
    }
    expect(held, 'a stream on the slow engine').toBeDefined();
    const del = await fetch(`${stack.router.url}/workers/${encodeURIComponent(slow)}`, { method: 'DELETE' });
    expect(await del.json()).toMatchObject({ draining: true });
    await expect.poll(() => cell(page, slow, 'health').textContent(), WAIT).toBe('draining');
    expect(await cell(page, slow, 'load').textContent()).toBe('1');
    expect(await row(page, slow).locator('button').isDisabled()).toBe(true);
    await expect
      .poll(() => eventsText(page), WAIT)
      .toContain('draining (removal requested from the admin API)');
    cancel.abort();
    await expect.poll(() => row(page, slow).count(), WAIT).toBe(0);
  });

  it('drains a worker from the page (a second click confirms)', async () => {
    const target = ids[0]!;
    const button = row(page, target).locator('button');
    await button.click();
    expect(await button.textContent()).toBe('Confirm');
    expect(await apiWorker(stack.router.url, target)).toBeDefined(); // one click does nothing yet
    await button.click();
    await expect.poll(() => apiWorker(stack.router.url, target), WAIT).toBeUndefined();
    await expect.poll(() => row(page, target).count(), WAIT).toBe(0);
    expect(await text(page, '#action-status')).toBe(`Removed ${target}`);
    expect(await eventsText(page)).toContain('removed from the admin API');
  });

  it('adds a worker from the page', async () => {
    await page.fill('#add-url', spare.url);
    await page.click('#add button[type=submit]');
    await expect.poll(() => apiWorker(stack.router.url, spare.url), WAIT).toBeDefined();
    await expect.poll(() => cell(page, spare.url, 'health').textContent(), WAIT).toBe('healthy');
    expect(await text(page, '#action-status')).toBe(`Added ${spare.url}`);
    expect(await eventsText(page)).toContain('added from the admin API');
  });

  it('had no console error, page error or failed request throughout', () => {
    expect(problems).toEqual([]);
  });
});

suite('the live fleet page with --admin-api-key', () => {
  const KEY = 'dashboard-test-key-0123';
  let stack: Running;
  let browser: Chromium;

  beforeAll(async () => {
    [stack, browser] = await Promise.all([
      startStack({ engines: 1, config: { admin: { apiKey: KEY } } }),
      launchChromium(),
    ]);
  });

  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
  });

  it('asks for the key, then sends it with every request (kept for the tab only)', async () => {
    const page = await browser.context.newPage();
    const problems = watch(page);
    const res = await page.goto(`${stack.router.url}/dashboard`);
    expect(res?.status()).toBe(401);
    await expect.poll(() => text(page, '#conn'), WAIT).toBe('admin key required');
    expect(await page.locator('#workers tbody tr').count()).toBe(0);
    await page.fill('#token', KEY);
    await page.click('#auth button[type=submit]');
    const id = stack.engines[0]!.url;
    await expect.poll(() => cell(page, id, 'health').textContent(), WAIT).toBe('healthy');
    expect(await page.evaluate(() => Object.values(sessionStorage))).toEqual([KEY]);
    expect(await page.inputValue('#token')).toBe('');
    // Only the page itself and the polls before the key was typed were refused.
    expect(problems.filter((p) => !p.includes('401'))).toEqual([]);
    await page.close();
  });
});
