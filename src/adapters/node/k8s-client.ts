/**
 * The Kubernetes side of discovery, on @kubernetes/client-node (loaded only when discovery is on:
 * it takes most of a second to import). Credentials: --kubeconfig, else the client's defaults
 * (KUBECONFIG, ~/.kube/config, then the pod's service account: token file, CA and
 * KUBERNETES_SERVICE_HOST/PORT). A pod source is the client's ListWatch on one label selector (pushed
 * to the API server): it lists, watches from the list's resourceVersion, re-lists on 410 Gone and
 * resumes a closed watch from the last resourceVersion. Around it: watches ask for bookmarks (they
 * move the resourceVersion) and end server-side after WATCH_TIMEOUT_SECS, a list that hangs or a
 * watch silent for too long fails, and every stage reports to hooks (list done, watch open, events).
 */
import type { KubeConfig, V1Pod, Watch } from '@kubernetes/client-node';
import { ConfigError } from '../../core/config/errors.ts';
import { type Clock, type TimerHandle, watchdog } from '../../core/contracts/runtime.ts';
import type { PodEventType, PodLike } from './k8s-pods.ts';

/** Server-side end of each watch (client-go picks 5-10 min); the watch then resumes. */
export const WATCH_TIMEOUT_SECS = 300;
/** A watch that sent nothing (not even a bookmark) this long after its timeout is cut. */
export const WATCH_IDLE_MS = (WATCH_TIMEOUT_SECS + 60) * 1000;
export const LIST_TIMEOUT_MS = 30_000;

export interface PodSourceHooks {
  event(type: PodEventType, pod: PodLike): void;
  /** A list finished and its pods were reported (first list, or a re-list after 410 Gone). */
  listed(): void;
  /** A watch request was answered 200 (the stream is open). */
  watching(): void;
  /** A watch request is about to be sent. */
  watchStarting(): void;
  /** Something arrived on the watch (an event or a bookmark). */
  activity(): void;
  /** The list or the watch failed; the source stopped until `start()` is called again. */
  failed(err: unknown, stage: 'list' | 'watch'): void;
}

/** One label selector's pods: `start()` (again after a failure) resumes where it was. */
export interface PodSource {
  start(): void;
  stop(): Promise<void>;
}

export interface PodTarget {
  /** Unset: all namespaces. */
  namespace?: string | undefined;
  labelSelector: string;
}

export type PodSourceFactory = (target: PodTarget, hooks: PodSourceHooks) => PodSource;

type ClientModule = typeof import('@kubernetes/client-node');

/** Loads the credentials; a kubeconfig that cannot be read, or none at all, is a configuration error. */
export async function loadKubeConfig(
  path: string | undefined,
): Promise<{ kc: KubeConfig; k8s: ClientModule }> {
  const k8s = await import('@kubernetes/client-node');
  const kc = new k8s.KubeConfig();
  const from =
    path !== undefined ? `--kubeconfig ${path}` : process.env.KUBECONFIG ? 'KUBECONFIG' : undefined;
  try {
    if (path !== undefined) kc.loadFromFile(path);
    else kc.loadFromDefault();
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new ConfigError(`${from ?? 'the default kubeconfig'}: cannot load Kubernetes credentials: ${why}`, {
      flag: '--kubeconfig',
      cause: err,
    });
  }
  const cluster = kc.getCurrentCluster();
  // With nothing found the client falls back to http://localhost:8080, which it then refuses to use.
  const fallback = cluster?.server === 'http://localhost:8080' && cluster.name === 'cluster';
  if (!cluster || (from === undefined && fallback && kc.getCurrentUser()?.name === 'user')) {
    throw new ConfigError(
      `${from ?? '--service-discovery'}: no Kubernetes credentials: give --kubeconfig, set KUBECONFIG, ` +
        'or run in a pod with a service account token',
      { flag: '--kubeconfig' },
    );
  }
  return { kc, k8s };
}

export function podsPath(namespace: string | undefined): string {
  return namespace === undefined
    ? '/api/v1/pods'
    : `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`;
}

/** A promise that rejects when `work` takes longer than `ms` (the work itself is left to finish). */
function timeLimit<T>(work: Promise<T>, ms: number, clock: Clock, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = clock.setTimeout(
      watchdog(() => reject(new Error(`${what}: no answer within ${ms} ms`))),
      ms,
    );
    (timer as { unref?: () => void } | undefined)?.unref?.();
    work.then(
      (v) => {
        clock.clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clock.clearTimeout(timer);
        reject(e);
      },
    );
  });
}

/** Pod sources on the client's ListWatch, with the credentials loaded. */
export function listWatchSources(kc: KubeConfig, k8s: ClientModule, clock: Clock): PodSourceFactory {
  const api = kc.makeApiClient(k8s.CoreV1Api);
  return (target, hooks) => {
    const { namespace, labelSelector } = target;
    let stopped = false;
    let listing = false;
    let idle: TimerHandle | undefined;
    const clearIdle = () => {
      if (idle !== undefined) clock.clearTimeout(idle);
      idle = undefined;
    };
    const list = () => {
      listing = true;
      const request =
        namespace === undefined
          ? api.listPodForAllNamespaces({ labelSelector })
          : api.listNamespacedPod({ namespace, labelSelector });
      return timeLimit(request, LIST_TIMEOUT_MS, clock, 'pod list');
    };
    class PodWatch extends k8s.Watch {
      override async watch(
        path: string,
        query: Record<string, string | number | boolean | undefined>,
        callback: (phase: string, obj: unknown, watchObj?: unknown) => void,
        done: (err: unknown) => void,
      ): Promise<AbortController> {
        if (stopped) return new AbortController();
        // The ListWatch asks for the watch right after reporting the list's pods.
        if (listing) hooks.listed();
        listing = false;
        hooks.watchStarting();
        let ended = false;
        let controller: AbortController | undefined;
        const arm = () => {
          clearIdle();
          idle = clock.setTimeout(
            watchdog(() => controller?.abort()),
            WATCH_IDLE_MS,
          );
          (idle as { unref?: () => void } | undefined)?.unref?.();
        };
        const onEvent = (phase: string, obj: unknown, raw?: unknown) => {
          if (phase !== 'ERROR') hooks.activity();
          arm();
          callback(phase, obj, raw);
        };
        const onDone = (err: unknown) => {
          ended = true;
          clearIdle();
          done(err);
        };
        const params = { ...query, allowWatchBookmarks: true, timeoutSeconds: WATCH_TIMEOUT_SECS };
        try {
          controller = await super.watch(path, params, onEvent, onDone);
        } catch (err) {
          // Before any request (credentials, no cluster): fail as a watch error would.
          onDone(err);
          return new AbortController();
        }
        if (!ended) {
          hooks.watching();
          arm();
        }
        return controller;
      }
    }
    const informer = new k8s.ListWatch<V1Pod>(
      podsPath(namespace),
      new PodWatch(kc) as Watch,
      list,
      false,
      labelSelector,
    );
    informer.on(k8s.ADD, (pod) => hooks.event('ADDED', pod));
    informer.on(k8s.UPDATE, (pod) => hooks.event('MODIFIED', pod));
    informer.on(k8s.DELETE, (pod) => hooks.event('DELETED', pod));
    informer.on(k8s.ERROR, (err: unknown) => {
      clearIdle();
      if (!stopped) hooks.failed(err, listing ? 'list' : 'watch');
    });
    return {
      start() {
        stopped = false;
        informer.start().catch((err: unknown) => {
          if (!stopped) hooks.failed(err, listing ? 'list' : 'watch');
        });
      },
      async stop() {
        stopped = true;
        clearIdle();
        await informer.stop();
      },
    };
  };
}

/** A short description of a client error: the HTTP status (and the API's message), or the cause. */
export function describeK8sError(err: unknown): { status?: number; code?: string; message: string } {
  const e = (typeof err === 'object' && err !== null ? err : {}) as {
    code?: unknown;
    statusCode?: unknown;
    body?: unknown;
    message?: unknown;
  };
  const status =
    typeof e.statusCode === 'number' ? e.statusCode : typeof e.code === 'number' ? e.code : undefined;
  if (status !== undefined) {
    let detail: string | undefined;
    try {
      const body = typeof e.body === 'string' ? JSON.parse(e.body) : e.body;
      if (typeof body?.message === 'string') detail = body.message;
    } catch {
      // not JSON: the status says enough
    }
    return { status, message: `HTTP ${status}${detail ? `: ${detail}` : ''}` };
  }
  const code = typeof e.code === 'string' ? e.code : undefined;
  const message = typeof e.message === 'string' ? e.message : String(err);
  return { ...(code ? { code } : {}), message };
}
