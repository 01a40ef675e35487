/**
 * Client auth over real loopback HTTP: validators are small node:http servers that accept one
 * token (and count the calls they get), engines are simulated vLLM engines, the router runs via
 * startNodeRouter, and the client is the official openai SDK (plain fetch where headers matter).
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { engineRequests, type Running, startStack } from '../support/harness.ts';

const VALID = 'sk-client-valid-4f9a2c';
const WRONG = 'sk-client-wrong-77e1b0';

type Mode = 'accept' | 'hang' | number;

interface Validator {
  url: string;
  /** Authorization headers received, in order. */
  seen: string[];
  /** 'accept': 200 for VALID and 401 otherwise; a number: always that status; 'hang': never answers. */
  mode: Mode;
  /** Sent as Location with every answer (a redirect, with a 3xx mode). */
  location?: string;
  /** Stops listening (connections are then refused). */
  stop(): Promise<void>;
  /** Listens again on the same port. */
  start(): Promise<void>;
}

async function startValidator(mode: Mode = 'accept'): Promise<Validator> {
  let server: Server | undefined;
  let port = 0;
  const v: Validator = {
    url: '',
    seen: [],
    mode,
    async start() {
      const s = createServer((req: IncomingMessage, res) => {
        req.resume();
        v.seen.push(req.headers.authorization ?? '');
        if (v.mode === 'hang') return;
        const status =
          v.mode === 'accept' ? (req.headers.authorization === `Bearer ${VALID}` ? 200 : 401) : v.mode;
        const body = JSON.stringify(status === 200 ? { id: 1, username: 'client' } : { message: 'no' });
        res.writeHead(status, {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          ...(v.location === undefined ? {} : { location: v.location }),
        });
        res.end(body);
      });
      await new Promise<void>((resolve) => s.listen(port, '127.0.0.1', resolve));
      port = (s.address() as { port: number }).port;
      v.url = `http://127.0.0.1:${port}/api/v4/user`;
      server = s;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (!server) return resolve();
        const s = server;
        server = undefined;
        s.closeAllConnections();
        s.close(() => resolve());
      }),
  };
  await v.start();
  return v;
}

type ErrorBody = { error: { message: string; type: string; code: string } };

const chatBody = { model: 'sim-model', messages: [{ role: 'user' as const, content: 'hi' }], max_tokens: 3 };

const sdk = (stack: Running, apiKey: string) =>
  new OpenAI({ baseURL: `${stack.router.url}/v1`, apiKey, maxRetries: 0 });

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function authChecks(stack: Running, result: string): Promise<number> {
  const text = await stack.router.metrics.render();
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`vllm_router_auth_checks_total{result="${result}"}`));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

describe('client auth over HTTP: one validator', () => {
  let validator: Validator;
  let stack: Running;
  beforeAll(async () => {
    validator = await startValidator();
    stack = await startStack({
      engines: 2,
      engineOptions: { tokens: 4, ttftMs: 2, itlMs: 2 },
      config: {
        auth: { apiKeyValidationUrls: [validator.url] },
        server: { corsAllowedOrigins: ['https://app.example'] },
      },
      router: { healthLoop: false },
    });
  });
  afterAll(async () => {
    await stack.stop();
    await validator.stop();
  });

  it('the openai SDK with a valid token: chat completion, streaming and /v1/models; one validation', async () => {
    const client = sdk(stack, VALID);
    const completion = await client.chat.completions.create(chatBody);
    expect(completion.choices[0]?.message.content?.length).toBeGreaterThan(0);
    const stream = await client.chat.completions.create({ ...chatBody, stream: true });
    let content = '';
    for await (const chunk of stream) content += chunk.choices[0]?.delta.content ?? '';
    expect(content.length).toBeGreaterThan(0);
    const ids: string[] = [];
    for await (const model of client.models.list()) ids.push(model.id);
    expect(ids).toEqual(['sim-model']);
    // One validator call: later checks were answered from the cache.
    expect(validator.seen).toEqual([`Bearer ${VALID}`]);
  });

  it('a wrong token: the SDK throws AuthenticationError (401) and no engine is called', async () => {
    const before = engineRequests(stack.engines).length;
    const error = await sdk(stack, WRONG)
      .chat.completions.create(chatBody)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((error as InstanceType<typeof OpenAI.AuthenticationError>).status).toBe(401);
    expect((error as InstanceType<typeof OpenAI.AuthenticationError>).code).toBe('invalid_api_key');
    await expect(sdk(stack, WRONG).models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    expect(engineRequests(stack.engines).length).toBe(before);
    // The refusal is remembered: the second 401 did not ask the validator again.
    expect(validator.seen.filter((h) => h === `Bearer ${WRONG}`)).toHaveLength(1);
  });

  it('without a token: 401 with WWW-Authenticate on every route but the probes', async () => {
    const url = stack.router.url;
    const closed: [string, string][] = [
      ['GET', '/v1/models'],
      ['GET', '/metrics'],
      ['GET', '/health_generate'],
      ['POST', '/finish_session'],
      ['POST', '/v1/chat/completions'],
      ['POST', '/v1/completions'],
      ['POST', '/v1/embeddings'],
    ];
    for (const [method, path] of closed) {
      const res = await fetch(`${url}${path}`, { method, headers: { 'content-type': 'application/json' } });
      expect(res.status, `${method} ${path}`).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      const body = (await res.json()) as ErrorBody;
      expect(body.error).toMatchObject({ type: 'authentication_error', code: 'invalid_api_key' });
    }
    const malformed = await fetch(`${url}/v1/models`, { headers: { authorization: `Token ${VALID}` } });
    expect(malformed.status).toBe(401);
    for (const path of ['/liveness', '/readiness', '/health']) {
      expect((await fetch(`${url}${path}`)).status, path).toBe(200);
    }
    const preflight = await fetch(`${url}/v1/chat/completions`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,content-type',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://app.example');
  });

  it('/metrics on the main port with the token; the Prometheus listener stays as it was; no token in them', async () => {
    const main = await fetch(`${stack.router.url}/metrics`, { headers: bearer(VALID) });
    expect(main.status).toBe(200);
    const text = await main.text();
    expect(text).toMatch(/vllm_router_auth_checks_total\{result="cached_valid"\} [1-9]/);
    expect(text).toMatch(/vllm_router_auth_checks_total\{result="invalid"\} 1/);
    expect(text).not.toContain(VALID);
    expect(text).not.toContain(WRONG);
    const listener = await fetch(stack.router.metricsUrl!);
    expect(listener.status).toBe(200);
    expect(await listener.text()).not.toContain(VALID);
  });

  it('engines never see the client token (the router strips it before forwarding)', async () => {
    const client = sdk(stack, VALID);
    await client.chat.completions.create(chatBody);
    await (
      await fetch(`${stack.router.url}/v1/completions`, {
        method: 'POST',
        headers: { ...bearer(VALID), 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sim-model', prompt: 'x', max_tokens: 2 }),
      })
    ).arrayBuffer();
    const seen = stack.engines.flatMap((e) => [...e.engine.log, ...e.engine.probeLog]);
    expect(seen.filter((r) => r.kind === 'inference').length).toBeGreaterThan(0);
    for (const request of seen) {
      for (const value of Object.values(request.headers)) expect(value).not.toContain(VALID);
    }
    expect(stack.logs.join('\n')).not.toContain(VALID);
  });
});

describe('client auth over HTTP: a validator that is down', () => {
  let validator: Validator | undefined;
  let stack: Running | undefined;
  afterEach(async () => {
    await stack?.stop();
    await validator?.stop();
    stack = undefined;
    validator = undefined;
  });

  const start = async (v: Validator, auth: Record<string, unknown> = {}) =>
    startStack({
      engines: 2,
      config: { auth: { apiKeyValidationUrls: [v.url], ...auth }, log: { level: 'warn' } },
      router: { healthLoop: false },
    });

  const expectUnavailable = async (res: Response) => {
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(((await res.json()) as ErrorBody).error).toMatchObject({
      type: 'service_unavailable_error',
      code: 'auth_unavailable',
    });
  };

  it('connection refused: 503 with Retry-After; the same token works once the validator is back', async () => {
    validator = await startValidator();
    stack = await start(validator);
    await validator.stop();
    await expectUnavailable(await fetch(`${stack.router.url}/v1/models`, { headers: bearer(VALID) }));
    const error = await sdk(stack, VALID)
      .models.list()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.InternalServerError);
    expect((error as InstanceType<typeof OpenAI.InternalServerError>).status).toBe(503);
    const warn = stack.logs.find((l) => l.includes('api key validator unavailable'));
    expect(warn).toContain('WARN');
    expect(warn).toContain(validator.url);
    expect(warn).toContain('ECONNREFUSED');
    expect(stack.logs.join('\n')).not.toContain(VALID);

    await validator.start();
    const completion = await sdk(stack, VALID).chat.completions.create(chatBody);
    expect(completion.choices).toHaveLength(1);
    expect(await authChecks(stack, 'unavailable')).toBe(2);
    expect(await authChecks(stack, 'valid')).toBe(1);
  });

  it('5xx then a timeout: 503 each time, nothing remembered; then the token works', async () => {
    validator = await startValidator(502);
    stack = await start(validator, { validationTimeoutSecs: 0.2 });
    await expectUnavailable(await fetch(`${stack.router.url}/v1/models`, { headers: bearer(VALID) }));
    validator.mode = 'hang';
    await expectUnavailable(await fetch(`${stack.router.url}/v1/models`, { headers: bearer(VALID) }));
    expect(stack.logs.join('\n')).toMatch(/api key validator unavailable .*reason=timeout/);
    validator.mode = 'accept';
    const res = await fetch(`${stack.router.url}/v1/models`, { headers: bearer(VALID) });
    expect(res.status).toBe(200);
    expect(validator.seen).toHaveLength(3);
  });
});

describe('client auth over HTTP: two validation URLs', () => {
  it('the first answers 401, the second 200: the token is valid', async () => {
    const refuser = await startValidator(401);
    const accepter = await startValidator();
    const stack = await startStack({
      engines: 2,
      config: { auth: { apiKeyValidationUrls: [refuser.url, accepter.url] } },
      router: { healthLoop: false },
    });
    try {
      const completion = await sdk(stack, VALID).chat.completions.create(chatBody);
      expect(completion.choices).toHaveLength(1);
      expect(refuser.seen).toEqual([`Bearer ${VALID}`]);
      expect(accepter.seen).toEqual([`Bearer ${VALID}`]);
      await expect(sdk(stack, WRONG).chat.completions.create(chatBody)).rejects.toBeInstanceOf(
        OpenAI.AuthenticationError,
      );
      expect(refuser.seen).toHaveLength(2);
      expect(accepter.seen).toHaveLength(2);
    } finally {
      await stack.stop();
      await refuser.stop();
      await accepter.stop();
    }
  });

  it('a redirect is a refusal: not followed, so the token never goes where the validator points', async () => {
    const elsewhere = await startValidator(200);
    const redirecting = await startValidator(302);
    redirecting.location = elsewhere.url;
    const stack = await startStack({
      engines: 1,
      config: { auth: { apiKeyValidationUrls: [redirecting.url] } },
      router: { healthLoop: false },
    });
    try {
      await expect(sdk(stack, VALID).models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
      expect(redirecting.seen).toEqual([`Bearer ${VALID}`]);
      expect(elsewhere.seen).toEqual([]);
    } finally {
      await stack.stop();
      await redirecting.stop();
      await elsewhere.stop();
    }
  });
});
