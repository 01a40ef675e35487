/**
 * The router configuration of the workerd test run (ROUTER_CONFIG), shared by the vitest config
 * (Node) and the tests (workerd). The engines are simulated vLLM engines on loopback, started in
 * Node by global-setup.ts.
 */

declare module 'vitest' {
  export interface ProvidedContext {
    engines: TestEngines;
  }
}

export interface TestEngines {
  /** Healthy engines serving `sim-model`: the config's workers. */
  a: string;
  b: string;
  /** Serves `flaky-model`; tests make it fail through its /admin/config. */
  flaky: string;
  /** Serves `sick-model`; its /health answers 503. */
  sick: string;
  /** Two engines serving both DUO_MODELS (two model pools sharing engines); not in the config. */
  duo: [string, string];
  /** A client token validation URL: 200 for GOOD_CLIENT_TOKEN, 401 otherwise. */
  validator: string;
}

export const DUO_MODELS = ['duo-a', 'duo-b'];

export const GOOD_CLIENT_TOKEN = 'workerd-client-token';

export const HEALTH = { failureThreshold: 2, successThreshold: 2 } as const;
export const REQUEST_TIMEOUT_SECS = 30;

export function routerConfig(engines: TestEngines) {
  return {
    workers: { urls: [engines.a, engines.b] },
    policy: { name: 'sticky_least_loaded' },
    retry: { maxRetries: 2, initialBackoffMs: 10, maxBackoffMs: 50 },
    health: { ...HEALTH, intervalSecs: 300, timeoutSecs: 2 },
    // The tests call the Worker as http://router/: that Host is allowed on admin routes.
    server: { requestTimeoutSecs: REQUEST_TIMEOUT_SECS },
    log: { level: 'error' },
  };
}
