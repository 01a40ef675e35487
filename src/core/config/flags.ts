/**
 * The command-line flag table, as data: which flag sets which config path, how its value is read,
 * where `--help` lists it, and which environment variables stand for it. No default lives here:
 * `--help` reads the defaults from the schema.
 */
import type { RouterConfig } from './schema.ts';
import { KV_CONNECTORS, LOG_LEVELS, POLICY_NAMES } from './schema.ts';

/**
 * How a flag's value is read. `list`: space-separated tokens up to the next flag, commas also split,
 * repeatable (appends). `csv-list`: one comma-separated token, repeatable. `custom`: see `custom`.
 */
export type FlagKind = 'string' | 'int' | 'number' | 'bool' | 'list' | 'csv-list' | 'custom';

/** Help sections, in the order (and mostly the names) of vllm-router's CLI reference. */
export const FLAG_GROUPS = [
  'General and server',
  'Workers',
  'Routing policies',
  'Prefill/decode disaggregation',
  'Kubernetes service discovery',
  'Retries',
  'Circuit breakers',
  'Stuck and slow engines',
  'Health checks',
  'Logging and metrics',
  'Authentication',
  'Shared state across replicas',
  'Compatibility',
] as const;
export type FlagGroup = (typeof FLAG_GROUPS)[number];

/** Dot paths to the leaves of RouterConfig (arrays are leaves), checked at compile time. */
type Leaves<T, P extends string = ''> = {
  [K in keyof T & string]-?: NonNullable<T[K]> extends readonly unknown[]
    ? `${P}${K}`
    : NonNullable<T[K]> extends object
      ? Leaves<NonNullable<T[K]>, `${P}${K}.`>
      : `${P}${K}`;
}[keyof T & string];
export type ConfigPath = Leaves<RouterConfig>;

export interface FlagSpec {
  readonly flag: string;
  readonly aliases?: readonly string[];
  /** Where the value goes. Absent for meta, refused and ignored flags. */
  readonly path?: ConfigPath;
  readonly kind: FlagKind;
  readonly group: FlagGroup;
  readonly help: string;
  /** Placeholder for the value in --help. */
  readonly metavar?: string;
  /** Environment variables that stand for this flag; the canonical VLLM_ROUTER_<FLAG> comes last. */
  readonly env?: readonly string[];
  /** List items are integers. */
  readonly items?: 'int';
  /** A bool flag that stores the opposite value (`--enable-retries` sets retry.disabled = false). */
  readonly negate?: true;
  /** Readers for flags whose syntax no kind expresses. */
  readonly custom?: 'prefill' | 'service-discovery' | 'routing-logic';
  /** Flags that steer the CLI itself rather than the config. */
  readonly meta?: 'config' | 'check-config' | 'help' | 'version' | 'demo';
  /** The flag is rejected with this hint; `{N+1}` is replaced by the flag's value plus one. */
  readonly refused?: string;
  /** The flag is accepted so other routers' command lines run, and ignored for this reason. */
  readonly ignored?: string;
  /** The flag works but prints this hint. */
  readonly deprecated?: string;
  /** Only its environment variables may set it (a secret): the flag itself is refused with this hint. */
  readonly envOnly?: string;
  /** A URL whose password must come from the environment: on the command line it is refused with this hint. */
  readonly noInlinePassword?: string;
}

/** `--worker-urls` → `VLLM_ROUTER_WORKER_URLS`. */
export function envName(flag: string): string {
  return `VLLM_ROUTER_${flag.replace(/^-+/, '').toUpperCase().replaceAll('-', '_')}`;
}

type Entry = Omit<FlagSpec, 'group' | 'env'> & { readonly extraEnv?: readonly string[] };
type Extra = Partial<Omit<Entry, 'flag' | 'aliases' | 'kind' | 'path' | 'help'>>;

/** One table row. `names` is the flag followed by its aliases: `'--retry-max-retries|--max-retries'`. */
function f(
  names: string,
  kind: FlagKind,
  path: ConfigPath | undefined,
  help: string,
  extra: Extra = {},
): Entry {
  const [flag = names, ...aliases] = names.split('|');
  return { flag, ...(aliases.length ? { aliases } : {}), kind, ...(path ? { path } : {}), help, ...extra };
}

function group(name: FlagGroup, entries: readonly Entry[]): FlagSpec[] {
  return entries.map(({ extraEnv, ...entry }) => {
    const setsConfig = entry.path !== undefined || entry.custom !== undefined || entry.meta === 'config';
    const hasEnv = setsConfig && entry.refused === undefined && entry.ignored === undefined;
    const env = hasEnv ? [...(extraEnv ?? []), envName(entry.flag)] : undefined;
    return { ...entry, group: name, ...(env ? { env } : {}) };
  });
}

const LOGIC = 'roundrobin, session, prefixaware, kvaware, disaggregated_prefill(_orchestrated)';
const SLL = 'sticky_least_loaded:';
const IGNORED = 'Ignored (production-stack)';
const STATS = { ignored: 'see /metrics for statistics' } as const;

// biome-ignore format: one flag per line reads as a table
export const FLAGS: readonly FlagSpec[] = [
  ...group('General and server', [
    f('--host', 'string', 'server.host', 'Address the router listens on'),
    f('--port', 'int', 'server.port', 'Port the router listens on'),
    f('--max-payload-size', 'int', 'server.maxPayloadSize', 'Largest request body accepted, in bytes (413 above)'),
    f('--max-buffered-bytes-total', 'int', 'server.maxBufferedBytesTotal', 'Request bodies buffered at once, all requests together, in bytes (503 + Retry-After above; 0 = no limit)', { metavar: 'BYTES' }),
    f('--request-timeout-secs', 'number', 'server.requestTimeoutSecs', 'Deadline of a request, retries included'),
    f('--shutdown-grace-period-secs', 'number', 'server.shutdownGraceSecs', 'On SIGTERM, time in-flight requests get to finish'),
    f('--cors-allowed-origins', 'list', 'server.corsAllowedOrigins', 'Browser origins allowed by CORS (also the only origins admin changes may come from)', { metavar: 'ORIGIN...' }),
    f('--allowed-hosts', 'list', 'server.allowedHosts', 'Host headers admin requests may carry besides the router\'s own address and localhost (names, *.domain, IPs, CIDRs)', { metavar: 'HOST...' }),
    f('--trusted-proxies', 'list', 'server.trustedProxies', 'Load balancers and proxies whose X-Forwarded-For names the client in the request log (IPs, CIDRs)', { metavar: 'CIDR...' }),
    f('--keep-alive-timeout-secs', 'number', 'server.keepAliveTimeoutSecs', 'Idle time before the router closes a client connection (keep it above the load balancer\'s)'),
    f('--shutdown-drain-delay-secs', 'number', 'server.shutdownDrainDelaySecs', 'On SIGTERM, time /readiness answers 503 while requests are still accepted, before the listener closes'),
    f('--max-concurrent-requests', 'int', 'admission.maxConcurrentRequests', 'Requests served at once (unset or <= 0: no limit)'),
    f('--queue-size', 'int', 'admission.queueSize', 'Requests that may wait for a free slot (429 when full)'),
    f('--queue-timeout-secs', 'number', 'admission.queueTimeoutSecs', 'Longest wait in the queue (then 503)'),
    f('--config', 'string', undefined, 'Read settings from a JSON file shaped like the --check-config output', { meta: 'config', metavar: 'FILE' }),
    f('--check-config', 'bool', undefined, 'Validate the configuration, print it resolved and exit', { meta: 'check-config' }),
    f('--help|-h', 'bool', undefined, 'Print this help and exit', { meta: 'help' }),
    f('--version|-V', 'bool', undefined, 'Print the version and exit', { meta: 'version' }),
    f('--demo', 'bool', undefined, 'With no workers configured, start two simulated engines and route to them (npm start passes it)', { meta: 'demo' }),
  ]),
  ...group('Workers', [
    f('--worker-urls', 'list', 'workers.urls', 'Worker base URLs (space or comma separated, repeatable)', { metavar: 'URL...' }),
    f('--static-backends', 'csv-list', 'workers.urls', 'production-stack spelling of --worker-urls', { metavar: 'URL,...' }),
    f('--static-models', 'csv-list', 'workers.models', 'Model of each worker URL, in order, or one model for all', { metavar: 'MODEL,...' }),
    f('--worker-url-allowlist', 'list', 'workers.urlAllowlist', 'Workers added at runtime must be on one of these hosts (names, *.domain, IPs, CIDRs)', { metavar: 'PATTERN...' }),
    f('--intra-node-data-parallel-size', 'int', 'workers.dpSize', 'Data-parallel ranks behind each worker URL'),
    f('--worker-startup-timeout-secs', 'number', 'workers.startupTimeoutSecs', 'How long a new worker may take to become healthy'),
    f('--worker-startup-check-interval', 'number', 'workers.startupCheckIntervalSecs', 'Seconds between checks of a starting worker'),
  ]),
  ...group('Routing policies', [
    f('--policy', 'string', 'policy.name', `Load-balancing policy: ${POLICY_NAMES.join(', ')}`, { metavar: 'POLICY' }),
    f('--prefill-policy', 'string', 'policy.prefill', 'Policy of the prefill pool (unset: --policy)', { metavar: 'POLICY' }),
    f('--decode-policy', 'string', 'policy.decode', 'Policy of the decode pool (unset: --policy)', { metavar: 'POLICY' }),
    f('--routing-logic', 'custom', undefined, `production-stack routing logic: ${LOGIC}`, { custom: 'routing-logic', metavar: 'LOGIC' }),
    f('--session-key', 'string', 'policy.sessionKey', 'Header that carries the session id (session routing)', { metavar: 'HEADER' }),
    f('--cache-threshold|--cache-match-threshold', 'number', 'policy.cacheThreshold', 'cache_aware: prefix match ratio (0..1) that pins a request to a worker'),
    f('--balance-abs-threshold|--spill-abs-threshold', 'int', 'policy.balanceAbsThreshold', 'cache_aware spill gate: requests above the mean load'),
    f('--balance-rel-threshold|--spill-rel-threshold', 'number', 'policy.balanceRelThreshold', 'cache_aware spill gate: multiple of the mean load (>= 1)'),
    f('--eviction-interval|--eviction-interval-secs', 'number', 'policy.evictionIntervalSecs', 'cache_aware: seconds between prefix-tree evictions'),
    f('--max-tree-size', 'int', 'policy.maxTreeSize', 'cache_aware: characters kept in each prefix tree (vLLM Router; memory is bounded by --max-tree-bytes)'),
    f('--max-tree-bytes', 'int', 'policy.maxTreeBytes', 'cache_aware: estimated memory of each prefix tree (one per model pool), in bytes'),
    f('--sll-session-expiration-secs', 'int', 'sll.sessionExpirationSecs', `${SLL} idle session lifetime`, { extraEnv: ['VLLM_ROUTER_SLL_SESSION_EXPIRATION_IN_S'] }),
    f('--sll-max-sessions', 'int', 'sll.maxSessions', `${SLL} sessions tracked (beyond: routed without affinity)`),
    f('--sll-max-session-id-bytes', 'int', 'sll.maxSessionIdBytes', `${SLL} longer session ids get no affinity`),
    f('--sll-active-window-secs', 'int', 'sll.activeWindowSecs', `${SLL} activity window (unset: the expiration)`, { extraEnv: ['VLLM_ROUTER_SLL_ACTIVE_WINDOW_IN_S'] }),
    f('--sll-rebalance-ratio', 'number', 'sll.rebalanceRatio', `${SLL} session imbalance that moves one session (0: off)`),
  ]),
  ...group('Prefill/decode disaggregation', [
    f('--vllm-pd-disaggregation|--pd-disaggregation', 'bool', 'pd.enabled', 'Send each request to a prefill worker, then a decode worker'),
    f('--prefill', 'custom', 'pd.prefill', 'Prefill worker and optional bootstrap port (repeatable)', { custom: 'prefill', metavar: 'URL [PORT|none]' }),
    f('--decode', 'list', 'pd.decode', 'Decode worker URL (repeatable)', { metavar: 'URL' }),
    f('--kv-connector', 'string', 'pd.kvConnector', `KV transfer connector: ${KV_CONNECTORS.join(', ')} (unset: nixl; p2p_nccl with --vllm-discovery-address)`, { metavar: 'NAME' }),
    f('--vllm-discovery-address', 'string', 'pd.discoveryAddress', 'Where P2P-NCCL workers register themselves (ZMQ ROUTER socket; Node, Deno)', { metavar: 'HOST:PORT' }),
    f('--pd-concurrent-dispatch', 'bool', 'pd.concurrentDispatch', 'Mooncake: send the decode leg without waiting for the prefill (as vLLM\'s Mooncake proxy)'),
    f('--pd-kv-hold-secs', 'number', 'pd.kvHoldSecs', 'How long a prefill engine holds KV blocks: a decode not started by then gets a fresh prefill'),
    f('--mooncake-bootstrap-timeout-secs', 'number', 'pd.bootstrapTimeoutSecs', 'Mooncake: timeout of each bootstrap /query'),
  ]),
  ...group('Kubernetes service discovery', [
    f('--service-discovery', 'custom', 'discovery.mode', 'Discover workers: k8s (also the bare flag) or static', { custom: 'service-discovery', metavar: '[static|k8s]' }),
    f('--selector', 'list', 'discovery.selector', 'Labels of worker pods', { metavar: 'KEY=VALUE...' }),
    f('--k8s-label-selector', 'csv-list', 'discovery.selector', 'production-stack spelling of --selector', { metavar: 'KEY=VALUE,...' }),
    f('--service-discovery-port|--k8s-port', 'int', 'discovery.port', 'Port of discovered workers'),
    f('--service-discovery-namespace|--k8s-namespace', 'string', 'discovery.namespace', 'Namespace to watch (unset: all)', { metavar: 'NAME' }),
    f('--prefill-selector', 'list', 'discovery.prefillSelector', 'Labels of prefill pods', { metavar: 'KEY=VALUE...' }),
    f('--decode-selector', 'list', 'discovery.decodeSelector', 'Labels of decode pods', { metavar: 'KEY=VALUE...' }),
    f('--kubeconfig', 'string', 'discovery.kubeconfig', 'Kubeconfig file (unset: KUBECONFIG, ~/.kube/config, then the in-cluster service account)', { metavar: 'PATH' }),
    f('--k8s-model-label', 'string', 'discovery.modelLabel', 'Pod label naming the model a pod serves (unset: its /v1/models)', { metavar: 'LABEL' }),
    f('--bootstrap-port-annotation', 'string', 'discovery.bootstrapPortAnnotation', 'Pod annotation with a prefill pod\'s bootstrap port (sglang.ai/bootstrap-port is read too)', { metavar: 'NAME' }),
  ]),
  ...group('Retries', [
    f('--retry-max-retries|--max-retries', 'int', 'retry.maxRetries', 'Attempts per request, the first included (1: no retry)'),
    f('--retry-initial-backoff-ms|--initial-backoff-ms', 'number', 'retry.initialBackoffMs', 'Delay before the first retry'),
    f('--retry-max-backoff-ms|--max-backoff-ms', 'number', 'retry.maxBackoffMs', 'Cap on a retry delay (applied before jitter)'),
    f('--retry-backoff-multiplier|--backoff-multiplier', 'number', 'retry.backoffMultiplier', 'Delay growth per retry (>= 1)'),
    f('--retry-jitter-factor|--jitter-factor', 'number', 'retry.jitterFactor', 'Random spread of each delay (0..1)'),
    f('--disable-retries', 'bool', 'retry.disabled', 'One attempt per request'),
    f('--enable-retries', 'bool', 'retry.disabled', 'production-stack: turn retries on (a production-stack command line has them off without it)', { negate: true }),
    f('--retryable-status-codes', 'list', 'retry.retryableStatusCodes', 'Backend statuses that are retried', { items: 'int', metavar: 'CODE...' }),
    f('--max-buffered-request-bytes', 'int', 'retry.maxBufferedRequestBytes', 'Larger request bodies stream with a single attempt'),
    f('--retry-budget-ratio', 'number', 'retry.budgetRatio', 'Retries may add this share of first attempts (10 s window)'),
    f('--retry-budget-min-per-sec', 'number', 'retry.budgetMinPerSec', 'Retries per second the budget always allows'),
  ]),
  ...group('Circuit breakers', [
    f('--cb-failure-threshold', 'int', 'circuitBreaker.failureThreshold', 'Consecutive failures that open a worker\'s breaker'),
    f('--cb-success-threshold', 'int', 'circuitBreaker.successThreshold', 'Half-open successes that close it'),
    f('--cb-timeout-duration-secs', 'number', 'circuitBreaker.timeoutDurationSecs', 'Time a breaker stays open before probing'),
    f('--cb-window-duration-secs', 'number', 'circuitBreaker.windowDurationSecs', 'Failures older than this are forgotten'),
    f('--disable-circuit-breaker', 'bool', 'circuitBreaker.disabled', 'Never open a breaker'),
    f('--cb-capacity-status-codes', 'list', 'circuitBreaker.capacityStatusCodes', 'Statuses that mean busy, neither failure nor success', { items: 'int', metavar: 'CODE...' }),
    f('--cb-max-ejection-percent', 'int', 'circuitBreaker.maxEjectionPercent', 'At most this share of a pool is ejected by breakers at once (at least one of two or more workers; never the last available one)', { metavar: 'PERCENT' }),
    f('--pushback-cooldown-ms', 'number', 'circuitBreaker.pushbackCooldownMs', 'A capacity status (or 503) without Retry-After keeps new requests off the engine this long, doubling per repeat (0 = off)'),
    f('--pushback-cooldown-max-ms', 'number', 'circuitBreaker.pushbackCooldownMaxMs', 'Cap on that cooldown'),
  ]),
  ...group('Stuck and slow engines', [
    f('--stream-first-byte-timeout-secs', 'number', 'attempt.streamFirstByteTimeoutSecs', 'Streaming attempt: longest wait for the status and first chunk before retrying elsewhere (0 = off)'),
    f('--first-byte-timeout-secs', 'number', 'attempt.firstByteTimeoutSecs', 'Non-streaming attempt: longest wait for the response before retrying elsewhere (0 = off)'),
    f('--stream-idle-timeout-secs', 'number', 'attempt.streamIdleTimeoutSecs', 'Streaming answer: longest silence between chunks before the stream is cut (0 = off)'),
    f('--idle-timeout-secs', 'number', 'attempt.idleTimeoutSecs', 'Non-streaming answer: longest silence between body chunks (0 = off)'),
    f('--disable-stall-detection', 'bool', 'stall.disabled', 'Do not route around engines that make no progress while others do'),
    f('--stall-stream-min-secs', 'number', 'stall.streamMinSecs', 'No progress for this long (streaming) makes an engine a stall suspect'),
    f('--stall-min-secs', 'number', 'stall.minSecs', 'No progress for this long (non-streaming) makes an engine a stall suspect'),
    f('--stall-factor', 'number', 'stall.factor', 'The no-progress time must also exceed this multiple of the recent p95 time to first byte'),
    f('--slow-worker-factor', 'number', 'circuitBreaker.slowFactor', 'Skip an engine whose recent time to first byte exceeds this multiple of the fastest one\'s (and the margin) while another is available; re-measure it after 10 s (0 = off)'),
    f('--slow-worker-margin-ms', 'number', 'circuitBreaker.slowMarginMs', 'An engine is slow only when also this much slower than the fastest one'),
  ]),
  ...group('Health checks', [
    f('--health-failure-threshold', 'int', 'health.failureThreshold', 'Failed probes that take a worker out of rotation'),
    f('--health-success-threshold', 'int', 'health.successThreshold', 'Passed probes that bring it back'),
    f('--health-check-timeout-secs', 'number', 'health.timeoutSecs', 'Timeout of one probe'),
    f('--health-check-interval-secs', 'number', 'health.intervalSecs', 'Seconds between probes'),
    f('--health-check-endpoint', 'string', 'health.endpoint', 'Path probed on each worker', { metavar: 'PATH' }),
    f('--disable-health-check', 'bool', 'health.disabled', 'Do not probe workers'),
    f('--health-check-port', 'int', 'health.port', 'Also serve /health, /liveness and /readiness on this port'),
  ]),
  ...group('Logging and metrics', [
    f('--log-level', 'string', 'log.level', `Log level: ${LOG_LEVELS.join(', ')}`, { metavar: 'LEVEL' }),
    f('--log-json', 'bool', 'log.json', 'Write logs as JSON lines'),
    f('--prometheus-host', 'string', 'metrics.host', 'Address of the Prometheus metrics listener'),
    f('--prometheus-port', 'int', 'metrics.port', 'Port of the Prometheus metrics listener'),
    f('--request-id-headers', 'list', 'server.requestIdHeaders', 'Headers checked, in order, for a request id', { metavar: 'HEADER...' }),
    f('--no-routed-worker-header', 'bool', 'server.routedWorkerHeader', 'Leave x-routed-worker-id and x-smg-routed-worker-id (the engine\'s address) off client responses', { negate: true }),
  ]),
  ...group('Authentication', [
    f('--api-key', 'string', 'workers.apiKey', 'Bearer token the router sends to workers', { metavar: 'KEY' }),
    f('--api-key-validation-urls', 'list', 'auth.apiKeyValidationUrls', 'Require client bearer tokens that one of these URLs accepts', { metavar: 'URL...', extraEnv: ['API_KEY_VALIDATION_URLS'] }),
    f('--api-key-cache-ttl-secs', 'number', 'auth.cacheTtlSecs', 'How long an accepted client token stays accepted without asking again'),
    f('--api-key-negative-cache-ttl-secs', 'number', 'auth.negativeCacheTtlSecs', 'How long a refused client token stays refused without asking again'),
    f('--api-key-cache-size', 'int', 'auth.cacheSize', 'Client tokens remembered (least recently used beyond)'),
    f('--api-key-validation-timeout-secs', 'number', 'auth.validationTimeoutSecs', 'Timeout of one validation call (then 503, nothing cached)'),
    f('--admin-api-key', 'string', 'admin.apiKey', 'Bearer token the admin API requires (unset: loopback peers only)', { metavar: 'KEY' }),
  ]),
  ...group('Shared state across replicas', [
    f('--state-store', 'string', 'stateStore.url', 'Share the fleet between router replicas through Redis or Valkey 7+ (unset: in memory)', { metavar: 'redis://HOST:PORT/DB', noInlinePassword: 'put the password in VLLM_ROUTER_STATE_STORE_PASSWORD' }),
    f('--state-store-password', 'string', 'stateStore.password', 'The store password (from VLLM_ROUTER_STATE_STORE_PASSWORD only)', { metavar: 'PASSWORD', envOnly: 'a password on the command line is visible to every user of the machine: set VLLM_ROUTER_STATE_STORE_PASSWORD' }),
    f('--state-store-timeout-ms', 'int', 'stateStore.timeoutMs', 'How long a store call may take before the router decides on local state'),
    f('--state-store-key-prefix', 'string', 'stateStore.keyPrefix', "Prefix of the fleet's keys in the store (fleets sharing a database need distinct ones)", { metavar: 'PREFIX' }),
  ]),
  ...group('Compatibility', [
    f('--max-instance-failover-reroute-attempts', 'int', undefined, 'production-stack failover, refused', { refused: 'use --enable-retries --max-retries {N+1}' }),
    f('--log-dir', 'string', undefined, 'Ignored: logs go to stdout', { ignored: 'logs go to stdout', metavar: 'DIR' }),
    f('--engine-stats-interval', 'number', undefined, IGNORED, { ignored: 'engine statistics are not scraped' }),
    f('--request-stats-window', 'number', undefined, IGNORED, STATS),
    f('--log-stats', 'bool', undefined, IGNORED, STATS),
    f('--log-stats-interval', 'number', undefined, IGNORED, STATS),
    f('--static-backend-health-checks', 'bool', undefined, 'Ignored: workers are health-checked by default', { ignored: 'workers are health-checked by default (see --disable-health-check)' }),
    f('--static-model-types', 'csv-list', undefined, IGNORED, { ignored: 'workers are probed at --health-check-endpoint' }),
    f('--static-model-labels', 'csv-list', 'workers.modelLabels', 'Label of each worker URL, in order (with --prefill-model-labels / --decode-model-labels)', { metavar: 'LABEL,...' }),
    f('--prefill-model-labels', 'csv-list', 'pd.prefillLabels', 'Labels of prefill workers (--routing-logic disaggregated_prefill)', { metavar: 'LABEL,...' }),
    f('--decode-model-labels', 'csv-list', 'pd.decodeLabels', 'Labels of decode workers (--routing-logic disaggregated_prefill)', { metavar: 'LABEL,...' }),
  ]),
];

const KIND_METAVARS: Partial<Record<FlagKind, string>> = {
  int: 'N',
  number: 'NUM',
  string: 'VALUE',
  list: 'VALUE...',
  'csv-list': 'A,B,...',
};

/** The value placeholder: the table's, else one the flag name implies, else one for the kind. */
export function metavar(spec: FlagSpec): string {
  if (spec.metavar !== undefined) return spec.metavar;
  if (spec.kind === 'bool') return '';
  const byName: [RegExp, string][] = [
    [/-secs$|-interval$|-window$/, 'SECS'],
    [/-ms$/, 'MS'],
    [/port$/, 'PORT'],
    [/host$/, 'HOST'],
    [/-bytes$|payload-size$/, 'BYTES'],
  ];
  const named = byName.find(([pattern]) => pattern.test(spec.flag));
  if (named && spec.kind !== 'list' && spec.kind !== 'csv-list') return named[1];
  return KIND_METAVARS[spec.kind] ?? '';
}

/** Every spelling (flag and aliases) → its spec. */
export const FLAG_BY_NAME: ReadonlyMap<string, FlagSpec> = new Map(
  FLAGS.flatMap((spec) => [spec.flag, ...(spec.aliases ?? [])].map((name) => [name, spec] as const)),
);

/** Config path → the canonical flag that sets it (the first in the table). */
export const FLAG_BY_PATH: ReadonlyMap<string, FlagSpec> = new Map(
  [...FLAGS].reverse().flatMap((spec) => (spec.path ? [[spec.path, spec] as const] : [])),
);
