/**
 * Kubernetes pods as workers, as pure functions (no client, no fleet): which pods serve, at which
 * URL and in which role, and what a pod event means for the workers discovery added for that pod.
 *
 * A pod serves when it has a `status.podIP`, phase Running, a `Ready` condition that is True and no
 * `metadata.deletionTimestamp`. A serving pod is added once; a pod that stops being Ready is
 * suspended (no new requests; those in flight go on) and resumed when Ready again; a pod that is
 * terminating (deletionTimestamp), finished (Succeeded/Failed) or DELETED is removed (it drains),
 * whether or not it turned NotReady first. A new pod IP removes the old worker and adds a new one.
 */
import type { WorkerRole, WorkerSpec } from '../../core/contracts/fleet-api.ts';

/** The fields of a pod discovery reads (the client's V1Pod, or a watch event's raw object). */
export interface PodLike {
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    labels?: Record<string, string> | null;
    annotations?: Record<string, string> | null;
    deletionTimestamp?: unknown;
  };
  status?: {
    phase?: string;
    podIP?: string | null;
    conditions?: readonly { type: string; status: string }[] | null;
  };
}

export type PodEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** How the pods of one watched selector become workers. */
export interface PodRules {
  /** Port of the engine's HTTP server (--service-discovery-port). */
  port: number;
  /** The role of every pod this selector matches, or `label`: from the pod's role label. */
  role: WorkerRole | 'label';
  /** production-stack (role `label`): the label whose value is in prefillLabels or decodeLabels. */
  roleLabel?: string;
  prefillLabels?: readonly string[];
  decodeLabels?: readonly string[];
  /** --k8s-model-label: the label naming the model a pod serves (unset: learned from /v1/models). */
  modelLabel?: string;
  /** Annotations giving a prefill pod's bootstrap port, first found wins. */
  bootstrapAnnotations: readonly string[];
}

export interface PodIdentity {
  uid: string;
  name: string;
  namespace: string;
}

/** What a pod says about itself: whether it serves, and the worker it would be. */
export type PodReading =
  | { kind: 'gone'; reason: string }
  | { kind: 'skip'; reason: string }
  | { kind: 'worker'; spec: WorkerSpec; serving: boolean; notes: string[] }
  | { kind: 'no-ip' };

export function podIdentity(pod: PodLike): PodIdentity | undefined {
  const m = pod.metadata;
  if (!m?.uid || !m.name) return undefined;
  return { uid: m.uid, name: m.name, namespace: m.namespace ?? '' };
}

/** The `Ready` condition is True. */
export function podReady(pod: PodLike): boolean {
  return (pod.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

/** `http://<podIP>:<port>`, an IPv6 address in brackets. */
export function podUrl(ip: string, port: number): string {
  return ip.includes(':') ? `http://[${ip}]:${port}` : `http://${ip}:${port}`;
}

/** A bootstrap port annotation: a decimal port, or invalid. */
export function parseBootstrapPort(raw: string): number | undefined {
  if (!/^\d{1,5}$/.test(raw.trim())) return undefined;
  const n = Number(raw.trim());
  return n >= 1 && n <= 65535 ? n : undefined;
}

function roleOf(pod: PodLike, rules: PodRules): WorkerRole | { skip: string } {
  if (rules.role !== 'label') return rules.role;
  const key = rules.roleLabel ?? 'model';
  const value = pod.metadata?.labels?.[key];
  if (value !== undefined && rules.prefillLabels?.includes(value)) return 'prefill';
  if (value !== undefined && rules.decodeLabels?.includes(value)) return 'decode';
  return {
    skip:
      value === undefined
        ? `no ${key} label to give its role (prefill or decode)`
        : `its label ${key}=${value} is neither a prefill nor a decode label`,
  };
}

function bootstrapPort(pod: PodLike, rules: PodRules, notes: string[]): number | null {
  const annotations = pod.metadata?.annotations ?? {};
  for (const name of rules.bootstrapAnnotations) {
    const raw = annotations[name];
    if (raw === undefined) continue;
    const port = parseBootstrapPort(raw);
    if (port !== undefined) return port;
    notes.push(`annotation ${name}=${JSON.stringify(raw)} is not a port (1-65535): no bootstrap port`);
    return null;
  }
  return null;
}

/** Reads a pod under the rules of the selector that matched it. */
export function readPod(pod: PodLike, rules: PodRules, identity: PodIdentity): PodReading {
  const phase = pod.status?.phase;
  if (pod.metadata?.deletionTimestamp) return { kind: 'gone', reason: 'terminating' };
  if (phase === 'Succeeded' || phase === 'Failed') return { kind: 'gone', reason: `phase ${phase}` };
  const role = roleOf(pod, rules);
  if (typeof role === 'object') return { kind: 'skip', reason: role.skip };
  const ip = pod.status?.podIP;
  if (!ip) return { kind: 'no-ip' };
  const notes: string[] = [];
  const spec: WorkerSpec = {
    url: podUrl(ip, rules.port),
    role,
    source: { discovery: 'kubernetes', pod: identity.name, uid: identity.uid, namespace: identity.namespace },
  };
  if (role === 'prefill') spec.bootstrapPort = bootstrapPort(pod, rules, notes);
  const model = rules.modelLabel === undefined ? undefined : pod.metadata?.labels?.[rules.modelLabel];
  if (model) spec.models = [model];
  return { kind: 'worker', spec, serving: phase === 'Running' && podReady(pod), notes };
}

/** What discovery added for a pod: the worker spec (before data-parallel expansion), suspended or not. */
export interface Tracked {
  spec: WorkerSpec;
  suspended: boolean;
}

export type PodAction =
  | { kind: 'add'; spec: WorkerSpec }
  | { kind: 'suspend' }
  | { kind: 'resume' }
  | { kind: 'remove'; reason: string }
  | { kind: 'models'; models: string[] | null };

export interface Reconciled {
  actions: PodAction[];
  /** The state after the actions (undefined: nothing added for this pod). */
  next: Tracked | undefined;
  /** Why the pod is not a worker (logged once per pod), or notes on it (an invalid annotation). */
  notes: string[];
}

const sameModels = (a: readonly string[] | undefined, b: readonly string[] | undefined) =>
  (a ?? []).join('\n') === (b ?? []).join('\n');

/** Why a worker added for a pod cannot stay as it is (undefined: it can). */
function replaceReason(prev: Tracked, spec: WorkerSpec): string | undefined {
  if (prev.spec.url !== spec.url) return 'pod IP changed';
  if (prev.spec.role !== spec.role) return 'role changed';
  if (prev.spec.bootstrapPort !== spec.bootstrapPort) return 'bootstrap port changed';
  return undefined;
}

/** A pod with an IP: add it once it serves, or follow its readiness and models. */
function reconcileWorker(
  prev: Tracked | undefined,
  reading: Extract<PodReading, { kind: 'worker' }>,
): Reconciled {
  const { spec, serving, notes } = reading;
  const actions: PodAction[] = [];
  const why = prev ? replaceReason(prev, spec) : undefined;
  if (why) actions.push({ kind: 'remove', reason: why });
  const base = why ? undefined : prev;
  if (!base) {
    // Added only once it serves: a pod still starting is not a worker yet.
    if (serving) actions.push({ kind: 'add', spec });
    return { actions, next: serving ? { spec, suspended: false } : undefined, notes };
  }
  if (!sameModels(base.spec.models, spec.models))
    actions.push({ kind: 'models', models: spec.models ?? null });
  if (serving && base.suspended) actions.push({ kind: 'resume' });
  if (!serving && !base.suspended) actions.push({ kind: 'suspend' });
  return { actions, next: { spec, suspended: !serving }, notes };
}

/** The actions a pod event calls for, given what discovery added for the pod so far (`prev`). */
export function reconcilePod(
  prev: Tracked | undefined,
  type: PodEventType,
  pod: PodLike,
  rules: PodRules,
): Reconciled {
  const identity = podIdentity(pod);
  if (!identity) return { actions: [], next: prev, notes: ['a pod without a name or UID: ignored'] };
  const reading: PodReading =
    type === 'DELETED' ? { kind: 'gone', reason: 'deleted' } : readPod(pod, rules, identity);
  if (reading.kind === 'gone' || reading.kind === 'skip') {
    const notes = reading.kind === 'skip' ? [`not a worker: ${reading.reason}`] : [];
    return { actions: prev ? [{ kind: 'remove', reason: reading.reason }] : [], next: undefined, notes };
  }
  if (reading.kind === 'no-ip') {
    // Not scheduled yet, or its IP is gone with the pod still there: hold it off until it has one.
    if (!prev || prev.suspended) return { actions: [], next: prev, notes: [] };
    return { actions: [{ kind: 'suspend' }], next: { ...prev, suspended: true }, notes: [] };
  }
  return reconcileWorker(prev, reading);
}
