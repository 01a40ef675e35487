/**
 * The fake Kubernetes API server itself: what it answers over HTTP (token, lists by namespace and
 * selector, watch streams from a resourceVersion, 410 after compaction, bookmarks, down and up),
 * and that the official client (@kubernetes/client-node: KubeConfig, CoreV1Api, its ListWatch
 * informer) works against it, 410 re-list included.
 */
import { CoreV1Api, KubeConfig, makeInformer, type V1Pod } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type FakeK8s, parseSelector, startFakeK8s, until, type WatchEvent } from '../support/fake-k8s.ts';

let k8s: FakeK8s;
beforeEach(async () => {
  k8s = await startFakeK8s({ token: 'good' });
});
afterEach(async () => {
  await k8s.close();
});

const auth = { authorization: 'Bearer good' };
const get = (path: string, headers: Record<string, string> = auth) => fetch(`${k8s.url}${path}`, { headers });
const names = (list: { items: V1Pod[] }) => list.items.map((p) => p.metadata?.name).sort();

/** Opens a watch; `next(n)` resolves with the first n events streamed so far. */
async function watch(query: string) {
  const res = await get(`/api/v1/namespaces/default/pods?watch=true&${query}`);
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const events: WatchEvent[] = [];
  let buffer = '';
  let done = false;
  const pump = async () => {
    for (;;) {
      const chunk = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (chunk.done) {
        done = true;
        return;
      }
      buffer += new TextDecoder().decode(chunk.value);
      for (let i = buffer.indexOf('\n'); i >= 0; i = buffer.indexOf('\n')) {
        events.push(JSON.parse(buffer.slice(0, i)) as WatchEvent);
        buffer = buffer.slice(i + 1);
      }
    }
  };
  void pump();
  return {
    res,
    events,
    ended: () => done,
    async next(n: number) {
      await until(() => events.length >= n || done, { what: `${n} watch events` });
      return events.slice(0, n);
    },
    cancel: () => reader.cancel().catch(() => {}),
  };
}

const meta = (e: WatchEvent) =>
  (e.object as { metadata: { name?: string; resourceVersion: string } }).metadata;

describe('fake Kubernetes API server over HTTP', () => {
  it('checks the bearer token and answers unknown paths with a 404 Status', async () => {
    expect((await get('/api/v1/pods', {})).status).toBe(401);
    const wrong = await get('/api/v1/pods', { authorization: 'Bearer bad' });
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toMatchObject({ kind: 'Status', code: 401, reason: 'Unauthorized' });
    expect((await get('/api/v1/services')).status).toBe(404);
    expect((await get('/api/v1/pods')).status).toBe(200);
  });

  it('lists pods by namespace and equality selector, with the resourceVersion, and logs each query', async () => {
    k8s.addPod({ name: 'a', labels: { app: 'vllm', role: 'x' }, ip: '10.0.0.5' });
    k8s.addPod({ name: 'b', labels: { app: 'vllm' }, ready: false, ip: '10.0.0.6' });
    k8s.addPod({ name: 'c', namespace: 'other', labels: { app: 'vllm' } });
    const list = await (await get('/api/v1/namespaces/default/pods?labelSelector=app%3Dvllm')).json();
    expect(list).toMatchObject({ kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: '1003' } });
    expect(names(list)).toEqual(['a', 'b']);
    const [a, b] = list.items as V1Pod[];
    expect(a?.status).toMatchObject({ phase: 'Running', podIP: '10.0.0.5' });
    expect(a?.status?.conditions).toContainEqual({ type: 'Ready', status: 'True' });
    expect(b?.status?.conditions).toContainEqual({ type: 'Ready', status: 'False' });
    expect(a?.metadata?.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(names(await (await get('/api/v1/pods?labelSelector=app=vllm,role=x')).json())).toEqual(['a']);
    expect(names(await (await get('/api/v1/pods?labelSelector=app==vllm')).json())).toEqual(['a', 'b', 'c']);
    expect((await get('/api/v1/pods?labelSelector=app+in+(vllm)')).status).toBe(400);
    expect(k8s.lists().map((r) => [r.path, r.query.labelSelector])).toEqual([
      ['/api/v1/namespaces/default/pods', 'app=vllm'],
      ['/api/v1/pods', 'app=vllm,role=x'],
      ['/api/v1/pods', 'app==vllm'],
      ['/api/v1/pods', 'app in (vllm)'],
    ]);
    expect(parseSelector('a=b, c=d')).toEqual([
      ['a', 'b'],
      ['c', 'd'],
    ]);
  });

  it('streams ADDED, MODIFIED, DELETED after the resourceVersion; a pod leaving the selector is DELETED', async () => {
    k8s.addPod({ name: 'old', labels: { app: 'vllm' }, ip: '10.0.0.1' });
    const rv = k8s.resourceVersion();
    const w = await watch(`resourceVersion=${rv}&labelSelector=app%3Dvllm`);
    expect(w.res.status).toBe(200);
    expect(w.res.headers.get('transfer-encoding')).toBe('chunked');
    k8s.addPod({ name: 'p', labels: { app: 'vllm' } });
    k8s.addPod({ name: 'other', labels: { app: 'web' } });
    k8s.updatePod('p', { ip: '10.0.0.2' });
    k8s.updatePod('p', { terminating: true });
    k8s.updatePod('old', { labels: { app: 'web' } });
    k8s.deletePod('p');
    const events = await w.next(5);
    expect(events.map((e) => [e.type, meta(e).name])).toEqual([
      ['ADDED', 'p'],
      ['MODIFIED', 'p'],
      ['MODIFIED', 'p'],
      ['DELETED', 'old'],
      ['DELETED', 'p'],
    ]);
    expect(events.map((e) => Number(meta(e).resourceVersion))).toEqual([
      rv + 1,
      rv + 3,
      rv + 4,
      rv + 5,
      rv + 6,
    ]);
    const deleting = (e: WatchEvent | undefined) =>
      (e?.object as V1Pod | undefined)?.metadata?.deletionTimestamp;
    expect(deleting(events[2])).toBeDefined();
    expect(deleting(events[4])).toBeDefined();
    expect(deleting(events[1])).toBeUndefined();
    await w.cancel();
  });

  it('replays the events after an older resourceVersion; bookmarks only when allowed', async () => {
    const rv = k8s.resourceVersion();
    k8s.addPod({ name: 'p', ip: '10.0.0.2' });
    k8s.deletePod('p');
    const replay = await watch(`resourceVersion=${rv}&allowWatchBookmarks=true`);
    const plain = await watch(`resourceVersion=${k8s.resourceVersion()}`);
    expect((await replay.next(2)).map((e) => e.type)).toEqual(['ADDED', 'DELETED']);
    k8s.addPod({ name: 'elsewhere', namespace: 'other' });
    expect(k8s.bookmark()).toBe(1);
    const [, , bookmark] = await replay.next(3);
    expect(bookmark).toEqual({
      type: 'BOOKMARK',
      object: { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: String(rv + 3) } },
    });
    k8s.addPod({ name: 'q' });
    expect((await plain.next(1)).map((e) => e.type)).toEqual(['ADDED']);
    expect(plain.events).toHaveLength(1);
    await Promise.all([replay.cancel(), plain.cancel()]);
  });

  it('refuses a resourceVersion older than the compaction with 410 (ERROR event, or HTTP 410)', async () => {
    const rv = k8s.resourceVersion();
    k8s.addPod({ name: 'p' });
    k8s.compact();
    const w = await watch(`resourceVersion=${rv}`);
    expect(await w.next(1)).toEqual([
      { type: 'ERROR', object: expect.objectContaining({ kind: 'Status', code: 410, reason: 'Expired' }) },
    ]);
    await until(w.ended, { what: 'the watch ends after the ERROR' });
    const current = await watch(`resourceVersion=${k8s.resourceVersion()}`);
    expect(k8s.openWatches()).toBe(1);
    k8s.configure({ goneAs: 'status' });
    expect((await get(`/api/v1/namespaces/default/pods?watch=true&resourceVersion=${rv}`)).status).toBe(410);
    await current.cancel();
  });

  it('drops watches; goes down (refused, or 503) and up again on the same port', async () => {
    const w = await watch('resourceVersion=1000');
    expect(k8s.dropWatches()).toBe(1);
    await until(w.ended, { what: 'the dropped watch ends' });
    await k8s.down('unavailable');
    expect((await get('/api/v1/pods')).status).toBe(503);
    await k8s.down('refuse');
    await expect(get('/api/v1/pods')).rejects.toThrow();
    await k8s.up();
    expect((await get('/api/v1/pods')).status).toBe(200);
  });
});

describe('the official client against the fake', () => {
  const clientFor = (kubeconfig: string) => {
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    return { kc, api: kc.makeApiClient(CoreV1Api) };
  };

  it('lists through a kubeconfig with an inline token or a token file; a wrong token is a 401', async () => {
    k8s.addPod({ name: 'a', labels: { app: 'vllm' }, ip: '10.0.0.5' });
    for (const kubeconfig of [k8s.kubeconfig(), k8s.kubeconfig({ tokenFile: true })]) {
      const list = await clientFor(kubeconfig).api.listNamespacedPod({
        namespace: 'default',
        labelSelector: 'app=vllm',
      });
      expect(list.items.map((p) => [p.metadata?.name, p.status?.podIP])).toEqual([['a', '10.0.0.5']]);
    }
    expect(k8s.requests.every((r) => r.status === 200)).toBe(true);
    const wrong = clientFor(k8s.kubeconfig({ token: 'bad' })).api.listNamespacedPod({ namespace: 'default' });
    await expect(wrong).rejects.toMatchObject({ code: 401 });
  });

  it('the informer follows the pods, and re-lists after a 410 (a pod deleted in the gap is deleted)', async () => {
    k8s.addPod({ name: 'a', labels: { app: 'vllm' } });
    k8s.addPod({ name: 'b', labels: { app: 'vllm' } });
    const { kc, api } = clientFor(k8s.kubeconfig());
    const list = () => api.listNamespacedPod({ namespace: 'default', labelSelector: 'app=vllm' });
    const informer = makeInformer(kc, '/api/v1/namespaces/default/pods', list, 'app=vllm');
    const seen: string[] = [];
    for (const verb of ['add', 'update', 'delete'] as const) {
      informer.on(verb, (p) => void seen.push(`${verb} ${p.metadata?.name}`));
    }
    let errors = 0;
    informer.on('error', () => void errors++);
    await informer.start();
    await until(() => k8s.openWatches() === 1, { what: 'the informer watches' });
    k8s.addPod({ name: 'c', labels: { app: 'vllm' } });
    k8s.updatePod('a', { ip: '10.0.0.9' });
    await until(() => seen.length === 4, { what: 'four events' });
    expect(seen).toEqual(['add a', 'add b', 'add c', 'update a']);
    // A gap: the watch breaks while the server answers 503; b goes away; the history is compacted.
    await k8s.down('unavailable');
    await until(() => errors > 0, { what: 'the informer reports the error' });
    k8s.deletePod('b');
    k8s.compact();
    await k8s.up();
    await informer.start();
    await until(() => seen.length === 5, { what: 'the re-list deletes b' });
    expect(seen[4]).toBe('delete b');
    const watches = k8s.watches();
    expect(watches.some((r) => r.status === 200 && r.query.labelSelector === 'app=vllm')).toBe(true);
    expect(k8s.lists().filter((r) => r.status === 200)).toHaveLength(2);
    await informer.stop();
  });
});
