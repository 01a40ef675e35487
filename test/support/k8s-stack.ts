/** A router with Kubernetes discovery, started from a real command line, for the k8s-*.test.ts files. */
import OpenAI from 'openai';
import { type NodeRouterOptions, startNodeRouter } from '../../src/adapters/node/server.ts';
import { resolveConfig } from '../../src/core/config/load.ts';

/** A worker as GET /workers shows it (the fields these tests read). */
export interface WorkerView {
  url: string;
  role: string;
  pod?: string;
  pod_uid?: string;
  namespace?: string;
  discovered_by?: string;
  bootstrap_port?: number | null;
  healthy: boolean;
  draining: boolean;
  suspended?: boolean;
}

export type LogLine = Record<string, unknown> & { level: string; msg: string };

/** Takes new requests. */
export const serving = (w: WorkerView | undefined) => !!w?.healthy && !w.draining && !w.suspended;

/** The router (listeners moved to 127.0.0.1 port 0, JSON logs at info kept in `logs`). */
export async function startK8sRouter(argv: string[], options: NodeRouterOptions = {}) {
  const c = resolveConfig({ argv, env: {}, readTextFile: () => '' }).config;
  const logs: LogLine[] = [];
  const router = await startNodeRouter(
    {
      ...c,
      server: { ...c.server, host: '127.0.0.1', port: 0 },
      log: { ...c.log, level: 'info', json: true },
    },
    {
      logSink: (l) => void logs.push(JSON.parse(l) as LogLine),
      healthLoop: false,
      metricsListener: false,
      ...options,
    },
  );
  const get = (path: string) => fetch(`${router.url}${path}`);
  const workers = async () => ((await (await get('/workers')).json()) as { workers: WorkerView[] }).workers;
  const byPod = async (pod: string) => (await workers()).find((w) => w.pod === pod);
  const client = new OpenAI({ baseURL: `${router.url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
  return { router, logs, get, workers, byPod, client, stop: () => router.close(0) };
}

export type K8sRouter = Awaited<ReturnType<typeof startK8sRouter>>;
