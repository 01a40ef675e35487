import { describe, expect, it } from 'vitest';
import {
  allowlistRefusal,
  parseWorkerUrl,
  workerUrlProblem,
} from '../../../src/core/http/worker-url-rules.ts';

type ErrorBody = { error: { message: string; code: string; param: string | null } };

describe('worker URL rules (runtime additions)', () => {
  it('accepts http and https base URLs, with a port or a path', () => {
    for (const url of [
      'http://engine:8000',
      'https://engine.internal',
      'http://10.0.0.1:8000/',
      'http://[fd00::1]:8000/prefix',
    ]) {
      expect(workerUrlProblem(url), url).toBeUndefined();
    }
  });

  it('names the rule a URL breaks', () => {
    expect(workerUrlProblem('ftp://engine')).toMatch(/http/);
    expect(workerUrlProblem('file:///etc/passwd')).toMatch(/http/);
    expect(workerUrlProblem('engine:8000')).toMatch(/http/);
    expect(workerUrlProblem('not a url')).toMatch(/whitespace/);
    expect(workerUrlProblem('http://user:pw@engine')).toMatch(/credentials/);
    expect(workerUrlProblem('http://@engine')).toMatch(/credentials/);
    expect(workerUrlProblem('http://engine/?')).toMatch(/query/);
    expect(workerUrlProblem('http://engine?x=1')).toMatch(/query/);
    expect(workerUrlProblem('http://engine/#')).toMatch(/fragment/);
    expect(workerUrlProblem('http://engine\\@evil')).toMatch(/backslash/);
    expect(workerUrlProblem('http://engine/\nx')).toMatch(/control/);
  });

  it('parses ?url= into a 400 with param url that never echoes a password', async () => {
    const ok = parseWorkerUrl('http://engine:8000/');
    expect(ok).toEqual({ ok: true, url: 'http://engine:8000' });
    const missing = parseWorkerUrl(undefined);
    expect(missing.ok).toBe(false);
    const secret = parseWorkerUrl('http://admin:hunter2@engine:8000');
    if (secret.ok) throw new Error('accepted a URL with credentials');
    expect(secret.response.status).toBe(400);
    const text = await secret.response.text();
    expect(text).not.toContain('hunter2');
    const body = JSON.parse(text) as ErrorBody;
    expect(body.error).toMatchObject({ code: 'invalid_request', param: 'url' });
    expect(body.error.message).toMatch(/^url: .*credentials/);
  });

  it('restricts hosts to --worker-url-allowlist when one is given (403 naming the flag)', async () => {
    expect(allowlistRefusal([], 'http://anything')).toBeUndefined();
    const list = ['*.svc.cluster.local', '10.0.0.0/8'];
    expect(allowlistRefusal(list, 'http://vllm.ns.svc.cluster.local:8000')).toBeUndefined();
    expect(allowlistRefusal(list, 'http://10.1.2.3:8000')).toBeUndefined();
    const refused = allowlistRefusal(list, 'http://169.254.169.254');
    expect(refused?.status).toBe(403);
    const body = (await refused!.json()) as ErrorBody;
    expect(body.error).toMatchObject({ code: 'forbidden', param: 'url' });
    expect(body.error.message).toContain('--worker-url-allowlist');
  });
});
