/**
 * SMG's x-smg-routed-worker-id beside x-routed-worker-id (core app in memory), on answers and on
 * the router's own errors, and --no-routed-worker-header taking both off.
 */
import { describe, expect, it } from 'vitest';
import { chatBody, checkLeasesAfterEach, startApp } from './app-stack.ts';

checkLeasesAfterEach();

const fail503 = { failure: { mode: 'status' as const, status: 503 } };

describe('routed worker headers (core app in memory)', () => {
  it('names the worker under both names on an answer and on an exhausted-retries error', async () => {
    const app = await startApp('--worker-urls http://a.test --retry-max-retries 2', { 'a.test': {} });
    const ok = await app.post(chatBody('Which platform for Interlaken?'));
    expect(ok.status).toBe(200);
    await ok.arrayBuffer();
    expect(ok.headers.get('x-routed-worker-id')).toBe('http://a.test');
    expect(ok.headers.get('x-smg-routed-worker-id')).toBe('http://a.test');

    app.engines['a.test']!.configure(fail503);
    const failed = await app.post(chatBody('And for Grindelwald?'));
    expect(failed.status).toBe(503);
    await failed.arrayBuffer();
    expect(failed.headers.get('x-routed-worker-id')).toBe('http://a.test');
    expect(failed.headers.get('x-smg-routed-worker-id')).toBe('http://a.test');
  });

  it('--no-routed-worker-header leaves both off, answers and errors alike', async () => {
    const app = await startApp('--worker-urls http://a.test --no-routed-worker-header --disable-retries', {
      'a.test': {},
    });
    const ok = await app.post(chatBody('Which platform for Interlaken?'));
    expect(ok.status).toBe(200);
    await ok.arrayBuffer();
    expect(ok.headers.get('x-routed-worker-id')).toBeNull();
    expect(ok.headers.get('x-smg-routed-worker-id')).toBeNull();
    expect(ok.headers.get('x-router-attempts')).toBe('1');

    app.engines['a.test']!.configure(fail503);
    const failed = await app.post(chatBody('And for Grindelwald?'));
    expect(failed.status).toBe(503);
    await failed.arrayBuffer();
    expect(failed.headers.get('x-routed-worker-id')).toBeNull();
    expect(failed.headers.get('x-smg-routed-worker-id')).toBeNull();
  });
});
