/**
 * A fake Kubernetes API server on loopback, speaking the pods wire protocol: bearer token checked;
 * `GET /api/v1[/namespaces/{ns}]/pods?labelSelector=k=v,...` → PodList with its resourceVersion;
 * `&watch=true&resourceVersion=RV` → chunked newline-delimited events after RV (410 Expired once RV
 * is older than the last compaction: an ERROR event as the watch cache sends, or an HTTP 410), with
 * BOOKMARKs if `allowWatchBookmarks=true`; a pod whose labels stop (start) matching a watcher's
 * selector reaches it as DELETED (ADDED). Also: engines behind pod IPs.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type RunningSimEngine, type StartSimOptions, startSimEngine } from '../../src/sim/node.ts';
import type { FakeClock } from './fake-clock.ts';

export interface PodSpec {
  name: string;
  namespace?: string; // default: `default`
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ip?: string; // status.podIP; unset: not scheduled yet
  phase?: 'Pending' | 'Running' | 'Succeeded' | 'Failed'; // default: Running with an IP, else Pending
  ready?: boolean; // the Ready condition; default: true when Running
  terminating?: boolean; // deletion requested: metadata.deletionTimestamp set, the pod runs on
}
type Obj = Record<string, unknown>;
type Meta = { name: string; namespace: string; uid: string; resourceVersion: string } & Obj;
export type Pod = { kind: 'Pod'; apiVersion: 'v1'; metadata: Meta; spec: Obj; status: Obj };
export type WatchEvent = { type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR'; object: unknown };
/** One request the server got; `status` is 0 until answered (200 once a watch streams). */
export type K8sRequest = { path: string; query: Record<string, string>; watch: boolean; status: number };

type Scope = { namespace: string | undefined; selector: [string, string][] };
type Change = { rv: number; cur: Pod | undefined; prev: Pod | undefined };
type Watcher = Scope & { res: ServerResponse; bookmarks: boolean };

const REASONS: Record<number, [string, string]> = {
  400: ['BadRequest', 'unable to parse requirement'],
  401: ['Unauthorized', 'Unauthorized'],
  404: ['NotFound', 'the server could not find the requested resource'],
  410: ['Expired', 'too old resource version'],
  503: ['ServiceUnavailable', 'the server is currently unable to handle the request'],
};
const statusOf = (code: number) => {
  const [reason, message] = REASONS[code] as [string, string];
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
};

/** `k=v,k2=v2` (also `k==v`); null for anything else (set-based selectors are not spoken here). */
export function parseSelector(text: string): [string, string][] | null {
  const out: [string, string][] = [];
  for (const part of text.split(',').filter((p) => p.trim() !== '')) {
    const m = /^\s*([\w./-]+)\s*==?\s*([\w.-]*)\s*$/.exec(part);
    if (!m) return null;
    out.push([m[1] as string, m[2] as string]);
  }
  return out;
}

const inScope = (s: Scope, p: Pod | undefined): p is Pod =>
  p !== undefined &&
  (s.namespace === undefined || p.metadata.namespace === s.namespace) &&
  s.selector.every(([k, v]) => (p.metadata.labels as Record<string, string>)[k] === v);

const withRv = (p: Pod, rv: number): Pod => ({ ...p, metadata: { ...p.metadata, resourceVersion: `${rv}` } });

function buildPod(s: PodSpec, uid: string, created: string, deleting?: unknown): Pod {
  const phase = s.phase ?? (s.ip ? 'Running' : 'Pending');
  const ready = s.ready ?? phase === 'Running';
  const met = { PodScheduled: true, Initialized: phase !== 'Pending', ContainersReady: ready, Ready: ready };
  const image = 'vllm/vllm-openai:latest';
  const deletionTimestamp = deleting ?? new Date().toISOString();
  const { name, namespace = 'default', labels = {}, annotations = {} } = s;
  return {
    kind: 'Pod',
    apiVersion: 'v1',
    metadata: {
      ...{ name, namespace, uid, resourceVersion: '', creationTimestamp: created, labels, annotations },
      ...(s.terminating ? { deletionTimestamp, deletionGracePeriodSeconds: 30 } : {}),
    },
    spec: { nodeName: 'node-1', containers: [{ name: 'vllm', image, ports: [{ containerPort: 8000 }] }] },
    status: {
      phase,
      ...(s.ip ? { podIP: s.ip, podIPs: [{ ip: s.ip }], hostIP: '10.0.0.1', startTime: created } : {}),
      conditions: Object.entries(met).map(([type, ok]) => ({ type, status: ok ? 'True' : 'False' })),
      containerStatuses: [{ name: 'vllm', ready, started: phase === 'Running', restartCount: 0, image }],
    },
  };
}

export type FakeK8s = Awaited<ReturnType<typeof startFakeK8s>>;

export async function startFakeK8s(options: { token?: string } = {}) {
  const pods = new Map<string, { spec: PodSpec; pod: Pod }>();
  const changes: Change[] = [];
  const watchers = new Set<Watcher>();
  const sockets = new Set<Socket>();
  const requests: K8sRequest[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'fake-k8s-'));
  let token = options.token ?? 'fake-k8s-token';
  let rv = 1000;
  let compactedBelow = 0;
  let mode: 'up' | 'refuse' | 'unavailable' = 'up';
  let goneAs: 'event' | 'status' = 'event';

  const send = (res: ServerResponse, e: WatchEvent) => void res.write(`${JSON.stringify(e)}\n`);
  const convert = (w: Watcher, c: Change): WatchEvent | undefined => {
    if (inScope(w, c.cur)) return { type: inScope(w, c.prev) ? 'MODIFIED' : 'ADDED', object: c.cur };
    return inScope(w, c.prev) ? { type: 'DELETED', object: withRv(c.prev, c.rv) } : undefined;
  };
  const commit = (key: string, spec: PodSpec | undefined, next: Pod | undefined) => {
    const change: Change = { rv: ++rv, cur: next && withRv(next, rv), prev: pods.get(key)?.pod };
    changes.push(change);
    if (spec && change.cur) pods.set(key, { spec, pod: change.cur });
    else pods.delete(key);
    for (const w of watchers) {
      const e = convert(w, change);
      if (e) send(w.res, e);
    }
    return change.cur ?? withRv(change.prev as Pod, rv);
  };
  const existing = (name: string, namespace = 'default') => {
    const found = pods.get(`${namespace}/${name}`);
    if (!found) throw new Error(`no pod ${namespace}/${name}`);
    return { key: `${namespace}/${name}`, ...found };
  };

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake-k8s');
    const query = Object.fromEntries(url.searchParams);
    const rec: K8sRequest = { path: url.pathname, query, watch: query.watch === 'true', status: 0 };
    requests.push(rec);
    req.resume();
    const reply = (code: number, body?: unknown) => {
      rec.status = code;
      res.writeHead(code, { 'content-type': 'application/json' });
      if (body !== null) res.end(JSON.stringify(body ?? statusOf(code)));
    };
    if (mode === 'unavailable') return reply(503);
    if (req.headers.authorization !== `Bearer ${token}`) return reply(401);
    const m = /^\/api\/v1(?:\/namespaces\/([^/]+))?\/pods$/.exec(url.pathname);
    if (req.method !== 'GET' || !m) return reply(404);
    const selector = parseSelector(query.labelSelector ?? '');
    if (!selector) return reply(400);
    const scope: Scope = { namespace: m[1] === undefined ? undefined : decodeURIComponent(m[1]), selector };
    const current = () => [...pods.values()].map((s) => s.pod).filter((p) => inScope(scope, p));
    const list = { kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: `${rv}` } };
    if (!rec.watch) return reply(200, { ...list, items: current() });
    const from = query.resourceVersion;
    const start = from === undefined || from === '' || from === '0' ? undefined : Number(from);
    if (start !== undefined && !(start >= compactedBelow)) {
      if (goneAs === 'status') return reply(410);
      reply(200, null);
      return void res.end(`${JSON.stringify({ type: 'ERROR', object: statusOf(410) })}\n`);
    }
    reply(200, null);
    res.flushHeaders();
    const w: Watcher = { ...scope, res, bookmarks: query.allowWatchBookmarks === 'true' };
    if (start === undefined) for (const p of current()) send(res, { type: 'ADDED', object: p });
    for (const c of start === undefined ? [] : changes.filter((c) => c.rv > start)) {
      const e = convert(w, c);
      if (e) send(res, e);
    }
    watchers.add(w);
    res.on('close', () => watchers.delete(w));
  });
  server.on('connection', (s) => void sockets.add(s.once('close', () => sockets.delete(s))));
  const listen = (p: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(p, '127.0.0.1', () => resolve(void server.off('error', reject)));
    });
  await listen(0);
  const port = (server.address() as { port: number }).port;
  const url = `http://127.0.0.1:${port}`;
  const endWatches = (how: 'cut' | 'end') => {
    const n = watchers.size;
    for (const w of watchers) how === 'cut' ? w.res.destroy() : w.res.end();
    watchers.clear();
    return n;
  };
  const stopListening = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const s of sockets) s.destroy();
    });
  let files = 0;

  return {
    url,
    port,
    /** Every request, oldest first. */
    requests,
    lists: () => requests.filter((r) => !r.watch),
    watches: () => requests.filter((r) => r.watch),
    resourceVersion: () => rv,
    openWatches: () => watchers.size,
    /** The token accepted from now on; how an expired watch is refused (an ERROR event, or an HTTP 410). */
    configure(o: { token?: string; goneAs?: 'event' | 'status' }) {
      token = o.token ?? token;
      goneAs = o.goneAs ?? goneAs;
    },
    addPod(spec: PodSpec): Pod {
      const key = `${spec.namespace ?? 'default'}/${spec.name}`;
      if (pods.has(key)) throw new Error(`pod ${key} exists`);
      return commit(key, { ...spec }, buildPod(spec, randomUUID(), new Date().toISOString()));
    },
    /** Changes a pod (labels and annotations are replaced when given): a MODIFIED event. */
    updatePod(name: string, change: Omit<PodSpec, 'name' | 'namespace'>, namespace?: string): Pod {
      const old = existing(name, namespace);
      const spec = { ...old.spec, ...change };
      const { uid, creationTimestamp, deletionTimestamp } = old.pod.metadata;
      return commit(old.key, spec, buildPod(spec, uid, creationTimestamp as string, deletionTimestamp));
    },
    /** The pod is gone: a DELETED event carrying its last state. */
    deletePod: (name: string, namespace?: string) =>
      commit(existing(name, namespace).key, undefined, undefined),
    /** A BOOKMARK at the current resourceVersion to each watcher that allows them; how many got one. */
    bookmark(): number {
      const marked = [...watchers].filter((w) => w.bookmarks);
      const object = { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: `${rv}` } };
      for (const w of marked) send(w.res, { type: 'BOOKMARK', object });
      return marked.length;
    },
    /** From now on a watch from a resourceVersion older than the current one is refused with 410. */
    compact() {
      compactedBelow = rv;
    },
    /** Ends every open watch: `cut` destroys the connection (default), `end` ends the stream cleanly. */
    dropWatches: (how: 'cut' | 'end' = 'cut') => endWatches(how),
    /** Down: `refuse` closes the listener (connections refused), `unavailable` answers 503. Watches are cut. */
    async down(how: 'refuse' | 'unavailable' = 'refuse') {
      endWatches('cut');
      if (how === 'refuse' && mode !== 'refuse') await stopListening();
      mode = how;
    },
    /** Back up, on the same port. */
    async up() {
      if (mode === 'refuse') await listen(port);
      mode = 'up';
    },
    /**
     * Writes a kubeconfig for this server (plain HTTP needs insecure-skip-tls-verify); its path. The
     * token inline, or with `tokenFile` read from a file by the provider in-cluster configs use.
     */
    kubeconfig(o: { token?: string; namespace?: string; tokenFile?: boolean } = {}): string {
      const file = join(dir, `kubeconfig-${++files}`);
      const bearer = o.token ?? token;
      if (o.tokenFile) writeFileSync(`${file}.token`, bearer);
      const auth = { 'auth-provider': { name: 'tokenFile', config: { tokenFile: `${file}.token` } } };
      const context = { cluster: 'fake', user: 'fake', ...(o.namespace ? { namespace: o.namespace } : {}) };
      const cluster = { server: url, 'insecure-skip-tls-verify': true };
      const users = [{ name: 'fake', user: o.tokenFile ? auth : { token: bearer } }];
      const config = { apiVersion: 'v1', kind: 'Config', 'current-context': 'fake', users };
      const named = { clusters: [{ name: 'fake', cluster }], contexts: [{ name: 'fake', context }] };
      writeFileSync(`${file}.json`, JSON.stringify({ ...config, ...named }));
      return `${file}.json`;
    },
    async close() {
      endWatches('cut');
      if (mode !== 'refuse') await stopListening();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Polls `check`; a fake clock's timers due within horizonMs (4 s < the 5 s probe timeout) fire meanwhile. */
export async function until(
  check: () => Promise<boolean> | boolean,
  o: { what?: string; timeoutMs?: number; clock?: FakeClock; horizonMs?: number } = {},
): Promise<void> {
  const deadline = Date.now() + (o.timeoutMs ?? 8000);
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not in time: ${o.what ?? 'condition'}`);
    const due = o.clock?.nextDueIn();
    if (due !== undefined && due <= (o.horizonMs ?? 4000)) o.clock?.advance(due);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** One simulated engine per pod IP (127.0.0.2, 127.0.0.3, ...), all on one port (--service-discovery-port). */
export async function startPodEngines(count: number, options: (i: number) => StartSimOptions = () => ({})) {
  for (let attempt = 0; ; attempt++) {
    const engines: RunningSimEngine[] = [];
    try {
      for (let i = 0; i < count; i++) {
        const port = engines[0]?.port ?? 0;
        engines.push(await startSimEngine({ id: `pod-${i}`, ...options(i), host: `127.0.0.${i + 2}`, port }));
      }
      return { port: engines[0]?.port as number, engines, ips: engines.map((_, i) => `127.0.0.${i + 2}`) };
    } catch (err) {
      await Promise.all(engines.map((e) => e.close()));
      // The port picked on 127.0.0.2 may be taken on another address: pick again.
      if ((err as { code?: string }).code !== 'EADDRINUSE' || attempt >= 5) throw err;
    }
  }
}
