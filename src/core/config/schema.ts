/**
 * The router configuration: one zod schema holding every type, default and range. Nothing else in
 * the code base states a default; `--help` and the README flag reference read them from here.
 */
import { z } from 'zod';
import { ConfigError, type ConfigIssue, closest, formatPath } from './errors.ts';
import { crossChecks, impliedSettings } from './schema-checks.ts';
import {
  addressBlock,
  bool,
  headerName,
  hostPattern,
  hostPort,
  httpUrl,
  int,
  list,
  num,
  oneOf,
  port,
  positive,
  section,
  selector,
  stateStoreFields,
  statusCodes,
  text,
} from './schema-parts.ts';

export { ConfigError } from './errors.ts';
export {
  breakerFields,
  DISCOVERY_MODES,
  KV_CONNECTORS,
  LOG_LEVELS,
  type LogLevel,
  POLICY_ALIASES,
  POLICY_NAMES,
  type PolicyName,
  retryFields,
} from './schema-names.ts';

import {
  breakerFields,
  DEFAULT_REQUEST_ID_HEADERS,
  DISCOVERY_MODES,
  KV_CONNECTORS,
  LOG_LEVEL_ALIASES,
  LOG_LEVELS,
  POLICY_ALIASES,
  POLICY_NAMES,
  retryFields,
} from './schema-names.ts';

export const routerConfigSchema = z
  .strictObject({
    server: section({
      host: text('host name or IP address').default('127.0.0.1'),
      port: port().default(30000),
      maxPayloadSize: int(1).default(536_870_912),
      maxBufferedBytesTotal: int(0).default(268_435_456),
      requestTimeoutSecs: positive().default(1800),
      // An empty list means the common headers (as vllm-router does).
      requestIdHeaders: list(headerName, 'HTTP header names')
        .transform((h) => (h.length === 0 ? [...DEFAULT_REQUEST_ID_HEADERS] : h))
        .default(() => [...DEFAULT_REQUEST_ID_HEADERS]),
      corsAllowedOrigins: list(text('origin'), 'origins').default(() => []),
      // Host headers admin requests may carry besides the router's own address and localhost.
      allowedHosts: list(hostPattern, 'host names or patterns').default(() => []),
      trustedProxies: list(addressBlock, 'IP addresses or CIDR blocks').default(() => []),
      // Longer than the 60 s idle timeout of common load balancers, so they close first.
      keepAliveTimeoutSecs: positive().default(75),
      // On SIGTERM: readiness turns 503 this long before the listener closes.
      shutdownDrainDelaySecs: num(0).default(5),
      shutdownGraceSecs: num(0).default(30),
      // x-routed-worker-id and x-smg-routed-worker-id on client responses (engine addresses).
      routedWorkerHeader: bool().default(true),
    }),
    workers: section({
      urls: list(httpUrl, 'worker URLs').default(() => []),
      models: list(text('model name'), 'model names').default(() => []),
      // production-stack: a label per URL; --prefill/--decode-model-labels give labels their role.
      modelLabels: list(text('label'), 'labels').default(() => []),
      apiKey: text('API key').optional(),
      // Workers added at runtime (admin API) must match one of these when any is given.
      urlAllowlist: list(hostPattern, 'host or CIDR patterns').default(() => []),
      dpSize: int(1).default(1),
      startupTimeoutSecs: positive().default(600),
      startupCheckIntervalSecs: positive().default(30),
    }),
    pd: section({
      enabled: bool().default(false),
      prefill: list(
        z.strictObject({ url: httpUrl, bootstrapPort: port().nullable().default(null) }),
        'prefill workers ({url, bootstrapPort})',
      ).default(() => []),
      decode: list(httpUrl, 'decode worker URLs').default(() => []),
      prefillLabels: list(text('label'), 'labels').default(() => []),
      decodeLabels: list(text('label'), 'labels').default(() => []),
      // Unset: nixl, or p2p_nccl when workers register over ZMQ (--vllm-discovery-address).
      kvConnector: oneOf(KV_CONNECTORS).optional(),
      discoveryAddress: hostPort.optional(),
      // Mooncake: send the decode leg without waiting for the prefill's answer.
      concurrentDispatch: bool().default(false),
      // How long a prefill engine holds the KV blocks for its decode (vLLM: about 30 s).
      kvHoldSecs: positive().default(30),
      // Mooncake bootstrap /query: per try, and the cap of the backoff between tries.
      bootstrapTimeoutSecs: positive().default(5),
    }),
    policy: section({
      // cache_aware by default, as in vllm-router and SMG.
      name: oneOf(POLICY_NAMES, POLICY_ALIASES).default('cache_aware'),
      prefill: oneOf(POLICY_NAMES, POLICY_ALIASES).optional(),
      decode: oneOf(POLICY_NAMES, POLICY_ALIASES).optional(),
      cacheThreshold: num(0, 1).default(0.3),
      balanceAbsThreshold: int(0).default(64),
      balanceRelThreshold: num(1).default(1.5),
      evictionIntervalSecs: positive().default(120),
      maxTreeSize: int(1).default(67_108_864),
      maxTreeBytes: int(1).default(67_108_864),
      sessionKey: headerName.optional(),
    }),
    sll: section({
      sessionExpirationSecs: int(1).default(7200),
      maxSessions: int(1).default(100_000),
      maxSessionIdBytes: int(1).default(256),
      // Unset: the session expiration is used.
      activeWindowSecs: int(1).optional(),
      rebalanceRatio: z
        .number({ error: 'must be 0 (off) or a number >= 1' })
        .refine((r) => r === 0 || r >= 1, { error: 'must be 0 (off) or a number >= 1' })
        .default(0),
    }),
    retry: section({
      ...retryFields,
      retryableStatusCodes: statusCodes.default(() => [408, 429, 500, 502, 503, 504]),
      maxBufferedRequestBytes: int(0).default(1_048_576),
      budgetRatio: num(0).default(0.2),
      budgetMinPerSec: num(0).default(10),
    }),
    circuitBreaker: section({
      ...breakerFields,
      capacityStatusCodes: statusCodes.default(() => [429]),
      maxEjectionPercent: int(0, 100).default(50),
      pushbackCooldownMs: num(0).default(250),
      pushbackCooldownMaxMs: num(0).default(10_000),
      slowFactor: num(0).default(4),
      slowMarginMs: num(0).default(500),
    }),
    attempt: section({
      // Per-attempt limits. 0 = off. Time to first byte: the status line and, for a stream, its
      // first chunk (nothing reaches the client before it, so an attempt cut then is retried).
      streamFirstByteTimeoutSecs: num(0).default(300),
      firstByteTimeoutSecs: num(0).default(0),
      // Silence between body chunks once the answer has started (then the cut is visible).
      streamIdleTimeoutSecs: num(0).default(300),
      idleTimeoutSecs: num(0).default(300),
    }),
    stall: section({
      // A worker that makes no progress while others do is routed around, and its attempts that
      // have not started answering are abandoned and retried elsewhere.
      disabled: bool().default(false),
      streamMinSecs: positive().default(5),
      minSecs: positive().default(30),
      // The no-progress time must also exceed this many times the recent p95 time to first byte.
      factor: num(1).default(4),
    }),
    health: section({
      failureThreshold: int(1).default(3),
      successThreshold: int(1).default(2),
      timeoutSecs: positive().default(5),
      intervalSecs: positive().default(60),
      endpoint: z
        .string({ error: 'must be a path starting with /' })
        .regex(/^\/\S*$/, { error: 'must be a path starting with /' })
        .default('/health'),
      disabled: bool().default(false),
      port: int(1, 65535).optional(),
    }),
    admission: section({
      // Unset = unlimited. SMG writes -1 for that: any value <= 0 reads as unset.
      maxConcurrentRequests: z
        .number({ error: 'must be an integer (<= 0 means unlimited)' })
        .int({ error: 'must be an integer (<= 0 means unlimited)' })
        .transform((n) => (n <= 0 ? undefined : n))
        .optional(),
      queueSize: int(0).default(100),
      queueTimeoutSecs: positive().default(60),
    }),
    auth: section({
      apiKeyValidationUrls: list(httpUrl, 'validation URLs').default(() => []),
      cacheTtlSecs: num(0).default(300),
      negativeCacheTtlSecs: num(0).default(30),
      cacheSize: int(1).default(10_000),
      validationTimeoutSecs: positive().default(5),
    }),
    admin: section({
      // Unset: admin routes answer loopback peers only (Node, Deno) or nobody (Workers).
      apiKey: text('admin API key').optional(),
    }),
    stateStore: section(stateStoreFields),
    discovery: section({
      mode: oneOf(DISCOVERY_MODES).optional(),
      selector: list(selector, 'key=value selectors').default(() => []),
      port: port().default(8000),
      namespace: text('namespace').optional(),
      prefillSelector: list(selector, 'key=value selectors').default(() => []),
      decodeSelector: list(selector, 'key=value selectors').default(() => []),
      // Unset: KUBECONFIG, else ~/.kube/config, else the pod's service account.
      kubeconfig: text('path').optional(),
      // production-stack: a pod label naming the model it serves (else its /v1/models).
      modelLabel: text('label name').optional(),
      // A prefill pod's bootstrap port (sglang.ai/bootstrap-port is read too).
      bootstrapPortAnnotation: text('annotation name').default('vllm.ai/bootstrap-port'),
    }),
    metrics: section({
      host: text('host name or IP address').default('127.0.0.1'),
      port: port().default(29000),
    }),
    log: section({
      level: oneOf(LOG_LEVELS, LOG_LEVEL_ALIASES).default('info'),
      json: bool().default(false),
    }),
  })
  .superRefine(crossChecks)
  .transform(impliedSettings);

export type RouterConfig = z.output<typeof routerConfigSchema>;
export type RouterConfigInput = z.input<typeof routerConfigSchema>;

/** Validates without throwing; load.ts uses the issues to blame the flag, variable or file. */
export function checkRouterConfig(
  raw: unknown,
): { ok: true; config: RouterConfig } | { ok: false; issues: ConfigIssue[] } {
  const result = routerConfigSchema.safeParse(raw);
  if (result.success) return { ok: true, config: result.data };
  const issues: ConfigIssue[] = [];
  for (const issue of result.error.issues) {
    const at = issue.path.filter((s): s is string | number => typeof s !== 'symbol');
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const near = closest(key, knownKeys(at));
        const message = `unknown field${near === undefined ? '' : ` (did you mean "${near}"?)`}`;
        issues.push({ path: formatPath([...at, key]), segments: [...at, key], message });
      }
      continue;
    }
    const message = at.length === 0 && issue.code === 'invalid_type' ? 'must be an object' : issue.message;
    const p = (issue.code === 'custom' ? (issue.params ?? {}) : {}) as {
      related?: string;
      relatedMessage?: string;
    };
    const related = p.related ? { related: { path: p.related, message: p.relatedMessage ?? message } } : {};
    issues.push({ path: formatPath(at), segments: at, message, ...related });
  }
  return { ok: false, issues };
}

/** Validates and fills defaults; throws a ConfigError naming each bad field. */
export function parseRouterConfig(raw: unknown): RouterConfig {
  const result = checkRouterConfig(raw);
  if (result.ok) return result.config;
  const lines = result.issues.map((i) => `${i.path || 'config'}: ${i.message}`);
  throw new ConfigError(lines.join('\n'), { path: result.issues[0]?.path ?? '' });
}

/** The configuration with nothing set: every default, fresh on each call. */
export function defaultRouterConfig(): RouterConfig {
  return routerConfigSchema.parse({});
}

// ---------------------------------------------------------------------------------------------
// Schema introspection (field names for "did you mean", and the test that every flag path exists).

interface WrapperDef {
  type: string;
  innerType?: z.core.$ZodType;
  in?: z.core.$ZodType;
  shape?: Record<string, z.core.$ZodType>;
  element?: z.core.$ZodType;
}

function unwrap(schema: z.core.$ZodType): WrapperDef {
  let def = schema._zod.def as unknown as WrapperDef;
  for (;;) {
    if (def.innerType) def = def.innerType._zod.def as unknown as WrapperDef;
    else if (def.type === 'pipe' && def.in) def = def.in._zod.def as unknown as WrapperDef;
    else return def;
  }
}

/** The field names of the object at `segments` (array indexes step into the element type). */
export function knownKeys(segments: readonly (string | number)[]): string[] {
  let def = unwrap(routerConfigSchema);
  for (const s of segments) {
    const next = typeof s === 'number' ? def.element : def.shape?.[s];
    if (next === undefined) return [];
    def = unwrap(next);
  }
  return def.shape ? Object.keys(def.shape) : [];
}
