/**
 * Client auth on Deno: the Deno router (the `deno` binary from node_modules, a real process) with
 * --api-key-validation-urls pointing at a loopback validator served by this test process. The
 * validation call goes through Deno's fetch, the token hash through Deno's Web Crypto.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startSimEngine } from '../../../src/sim/node.ts';
import { REPO_ROOT, spawnRouter } from '../router-process.ts';

const DENO = join(REPO_ROOT, 'node_modules/deno/deno');
const ENTRY = join(REPO_ROOT, 'src/adapters/deno/main.ts');
const PERMISSIONS = ['--allow-net', '--allow-env', '--allow-read'];
const denoDir = mkdtempSync(join(tmpdir(), 'vllm-edge-router-deno-auth-'));
const env = { DENO_DIR: denoDir, DENO_NO_UPDATE_CHECK: '1' };

afterAll(() => rmSync(denoDir, { recursive: true, force: true }));

const VALID = 'sk-deno-client-31c7';

describe('client auth on Deno', () => {
  it('401 without or with a wrong token, 200 with the one the validator accepts; probes open', async () => {
    const seen: string[] = [];
    const validator = createServer((req, res) => {
      req.resume();
      seen.push(req.headers.authorization ?? '');
      res.writeHead(req.headers.authorization === `Bearer ${VALID}` ? 200 : 401, {
        'content-type': 'application/json',
      });
      res.end('{}');
    });
    await new Promise<void>((resolve) => validator.listen(0, '127.0.0.1', resolve));
    const validatorUrl = `http://127.0.0.1:${(validator.address() as { port: number }).port}/user`;
    const engine = await startSimEngine({ id: 'deno-auth-engine', host: '127.0.0.1', port: 0 });
    const router = await spawnRouter(
      DENO,
      [
        'run',
        ...PERMISSIONS,
        ENTRY,
        ...['--port', '0', '--prometheus-port', '0'],
        ...['--worker-urls', engine.url],
        ...['--api-key-validation-urls', validatorUrl],
      ],
      { env },
    );
    try {
      const chat = (headers: Record<string, string>) =>
        fetch(`${router.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify({
            model: 'sim-model',
            messages: [{ role: 'user', content: 'hi' }],
            max_tokens: 2,
          }),
        });

      const missing = await chat({});
      expect(missing.status).toBe(401);
      expect(missing.headers.get('www-authenticate')).toBe('Bearer');
      expect(((await missing.json()) as { error: { code: string } }).error.code).toBe('invalid_api_key');

      const wrong = await chat({ authorization: 'Bearer sk-wrong' });
      expect(wrong.status).toBe(401);
      await wrong.arrayBuffer();

      const ok = await chat({ authorization: `Bearer ${VALID}` });
      expect(ok.status).toBe(200);
      expect(ok.headers.get('x-routed-worker-id')).toBe(engine.url);
      await ok.arrayBuffer();
      const models = await fetch(`${router.url}/v1/models`, {
        headers: { authorization: `Bearer ${VALID}` },
      });
      expect(models.status).toBe(200);
      await models.arrayBuffer();

      expect((await fetch(`${router.url}/v1/models`)).status).toBe(401);
      const liveness = await fetch(`${router.url}/liveness`);
      expect(liveness.status).toBe(200);
      await liveness.arrayBuffer();

      // One call per distinct token: the valid one was remembered for /v1/models.
      expect(seen).toEqual(['Bearer sk-wrong', `Bearer ${VALID}`]);
      expect(engine.engine.log).toHaveLength(1);
      expect(router.output()).not.toContain(VALID);
    } finally {
      await router.stop();
      await engine.close();
      await new Promise<void>((resolve) => {
        validator.closeAllConnections();
        validator.close(() => resolve());
      });
    }
  });
});
