// Options of the simulated engine: defaults, validation, and the kebab-case flag table shared by
// the CLI (`--ttft-ms 50`) and POST /admin/config (`{"ttft-ms": 50}`).
import { FAILURE_MODES, validatePlan } from './plan.ts';
import type { FailurePlan, SimConfig, SimOptions, SimSleep } from './types.ts';

export const defaultSleep: SimSleep = (ms, signal) =>
  new Promise<void>((resolve) => {
    if (!(ms > 0) || signal?.aborted) {
      resolve();
      return;
    }
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });

export function randomSimId(): string {
  return `sim-${crypto.randomUUID().slice(0, 8)}`;
}

export const SIM_DEFAULTS = {
  models: ['sim-model'],
  tokens: 16,
  ttftMs: 0,
  itlMs: 0,
  blockMs: 0,
  blockChars: 64,
  cacheBlocks: 4096,
  maxRunning: 0,
  maxModelLen: 8192,
  dpSize: 1,
  unhealthy: false,
  seed: 1,
  logSize: 10000,
  failure: { mode: 'none' } as FailurePlan,
  kvHost: '127.0.0.1',
  kvPort: 5600,
  kvWaitMs: 0,
  omitKvParams: false,
  queryFailFirst: 0,
} as const;

type NumericKey =
  | 'tokens'
  | 'ttftMs'
  | 'itlMs'
  | 'blockMs'
  | 'blockChars'
  | 'cacheBlocks'
  | 'maxRunning'
  | 'maxModelLen'
  | 'dpSize'
  | 'seed'
  | 'logSize'
  | 'kvPort'
  | 'kvWaitMs'
  | 'queryFailFirst';
const INTEGER_KEYS: readonly NumericKey[] = [
  'tokens',
  'blockChars',
  'cacheBlocks',
  'maxRunning',
  'maxModelLen',
  'dpSize',
  'seed',
  'logSize',
  'kvPort',
  'queryFailFirst',
];
const NUMBER_KEYS: readonly NumericKey[] = [...INTEGER_KEYS, 'ttftMs', 'itlMs', 'blockMs', 'kvWaitMs'];

/** Full, validated options from a partial set (throws a RangeError naming the bad option). */
export function resolveOptions(partial: Partial<SimOptions> = {}, base?: SimOptions): SimOptions {
  const merged: SimOptions = {
    ...SIM_DEFAULTS,
    id: '',
    sleep: defaultSleep,
    ...base,
    ...stripUndefined(partial),
  } as SimOptions;
  if (!merged.id) merged.id = randomSimId();
  for (const key of NUMBER_KEYS) {
    const v = merged[key];
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
      throw new RangeError(`option ${key} must be a finite number >= 0 (got ${String(v)})`);
    }
    if (INTEGER_KEYS.includes(key) && !Number.isInteger(v)) {
      throw new RangeError(`option ${key} must be an integer (got ${v})`);
    }
  }
  if (merged.blockChars < 1) throw new RangeError('option blockChars must be >= 1');
  if (merged.dpSize < 1) throw new RangeError('option dpSize must be >= 1');
  if (!Array.isArray(merged.models) || merged.models.length === 0 || merged.models.some((m) => !m)) {
    throw new RangeError('option models must be a non-empty list of model names');
  }
  merged.models = [...merged.models];
  merged.unhealthy = Boolean(merged.unhealthy);
  merged.omitKvParams = Boolean(merged.omitKvParams);
  merged.failure = validatePlan(merged.failure ?? { mode: 'none' });
  if (typeof merged.sleep !== 'function') throw new RangeError('option sleep must be a function');
  return merged;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  const out: Partial<T> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  return out;
}

type FlagType = 'int' | 'number' | 'fraction' | 'bool' | 'string' | 'list' | 'mode' | 'status';

export interface SimFlag {
  name: string;
  type: FlagType;
  /** Option it sets: a SimOptions key, or `failure.<field>`. */
  target: string;
  help: string;
}

/** The flag table: one row per option, in kebab-case. */
export const SIM_FLAGS: readonly SimFlag[] = [
  { name: 'id', type: 'string', target: 'id', help: 'engine id, sent as x-sim-engine (default sim-<port>)' },
  {
    name: 'model',
    type: 'list',
    target: 'models',
    help: 'served model name(s), comma separated or repeated',
  },
  { name: 'tokens', type: 'int', target: 'tokens', help: 'tokens generated before EOS (16)' },
  { name: 'ttft-ms', type: 'number', target: 'ttftMs', help: 'base time to first token (0)' },
  { name: 'itl-ms', type: 'number', target: 'itlMs', help: 'inter-token latency (0)' },
  { name: 'block-ms', type: 'number', target: 'blockMs', help: 'extra TTFT per uncached prompt block (0)' },
  { name: 'block-chars', type: 'int', target: 'blockChars', help: 'prompt block size in characters (64)' },
  {
    name: 'cache-blocks',
    type: 'int',
    target: 'cacheBlocks',
    help: 'prefix cache LRU capacity in blocks (4096)',
  },
  {
    name: 'max-running',
    type: 'int',
    target: 'maxRunning',
    help: 'max concurrently running requests, 0 = no limit',
  },
  { name: 'max-model-len', type: 'int', target: 'maxModelLen', help: 'max_model_len in /v1/models (8192)' },
  { name: 'dp-size', type: 'int', target: 'dpSize', help: 'data-parallel ranks reported by /query (1)' },
  { name: 'unhealthy', type: 'bool', target: 'unhealthy', help: 'GET /health answers 503' },
  { name: 'seed', type: 'int', target: 'seed', help: 'seed of the failure PRNG (1)' },
  { name: 'log-size', type: 'int', target: 'logSize', help: 'request log entries kept, 0 = off (10000)' },
  { name: 'kv-host', type: 'string', target: 'kvHost', help: 'remote_host in PD kv_transfer_params' },
  { name: 'kv-port', type: 'int', target: 'kvPort', help: 'remote_port in PD kv_transfer_params (5600)' },
  {
    name: 'kv-wait-ms',
    type: 'number',
    target: 'kvWaitMs',
    help: 'Mooncake decode: wait this long for the prefill engine to finish the transfer (0 = off)',
  },
  {
    name: 'omit-kv-params',
    type: 'bool',
    target: 'omitKvParams',
    help: 'PD prefill: answer without kv_transfer_params (the decode prefills locally)',
  },
  {
    name: 'query-fail-first',
    type: 'int',
    target: 'queryFailFirst',
    help: 'Mooncake bootstrap: the first N /query requests answer 503',
  },
  {
    name: 'fail-mode',
    type: 'mode',
    target: 'failure.mode',
    help: 'none | status | hang | reset | midstream | stall',
  },
  {
    name: 'fail-status',
    type: 'status',
    target: 'failure.status',
    help: 'status of injected failures (503)',
  },
  {
    name: 'fail-rate',
    type: 'fraction',
    target: 'failure.rate',
    help: 'fraction 0..1 of requests that fail',
  },
  { name: 'fail-first', type: 'int', target: 'failure.first', help: 'the first N inference requests fail' },
  {
    name: 'retry-after',
    type: 'string',
    target: 'failure.retryAfter',
    help: 'Retry-After of status failures',
  },
  { name: 'fail-body', type: 'string', target: 'failure.body', help: 'exact body of status failures' },
  {
    name: 'cut-after-chunks',
    type: 'int',
    target: 'failure.cutAfterChunks',
    help: 'midstream/stall: chunks before the cut or the stall',
  },
];

const FLAG_BY_NAME = new Map(SIM_FLAGS.map((f) => [f.name, f]));

export function findFlag(name: string): SimFlag | undefined {
  return FLAG_BY_NAME.get(name);
}

/** Parses one flag value (string from argv/env, or a JSON value from /admin/config). */
export function parseFlagValue(flag: SimFlag, raw: unknown): unknown {
  const bad = () => new RangeError(`invalid value for --${flag.name}: ${JSON.stringify(raw)}`);
  switch (flag.type) {
    case 'bool': {
      if (typeof raw === 'boolean') return raw;
      const s = String(raw).toLowerCase();
      if (['1', 'true', 'yes', 'on', ''].includes(s)) return true;
      if (['0', 'false', 'no', 'off'].includes(s)) return false;
      throw bad();
    }
    case 'string':
      if (typeof raw === 'object' && raw !== null) throw bad();
      return String(raw);
    case 'mode':
      if (!(FAILURE_MODES as readonly unknown[]).includes(raw)) {
        throw new RangeError(
          `invalid value for --${flag.name}: ${JSON.stringify(raw)} (${FAILURE_MODES.join(', ')})`,
        );
      }
      return raw;
    case 'list': {
      const items = Array.isArray(raw) ? raw.map(String) : String(raw).split(',');
      const list = items.map((s) => s.trim()).filter(Boolean);
      if (list.length === 0) throw bad();
      return list;
    }
    default: {
      const n =
        typeof raw === 'number'
          ? raw
          : typeof raw === 'string' && raw.trim() !== ''
            ? Number(raw)
            : Number.NaN;
      if (!Number.isFinite(n) || n < 0) throw bad();
      if (flag.type === 'int' && !Number.isInteger(n)) throw bad();
      if (flag.type === 'fraction' && n > 1) throw bad();
      if (flag.type === 'status' && !(Number.isInteger(n) && n >= 100 && n <= 599)) throw bad();
      return n;
    }
  }
}

/**
 * Turns kebab-case settings into a partial option set on top of `current`. Failure fields merge
 * into the current plan; setting only one of fail-rate / fail-first clears the other.
 * Throws a RangeError naming the first unknown or invalid setting.
 */
export function flagsToOptions(settings: Record<string, unknown>, current: SimConfig): Partial<SimOptions> {
  const out: Record<string, unknown> = {};
  const failure: Record<string, unknown> = {};
  for (const [name, raw] of Object.entries(settings)) {
    const flag = findFlag(name);
    if (!flag) throw new RangeError(`unknown setting --${name}`);
    const value = parseFlagValue(flag, raw);
    if (flag.target.startsWith('failure.')) failure[flag.target.slice(8)] = value;
    else out[flag.target] = value;
  }
  if (Object.keys(failure).length > 0) {
    const plan: Record<string, unknown> = { ...current.failure, ...failure };
    if ('rate' in failure && !('first' in failure)) delete plan.first;
    if ('first' in failure && !('rate' in failure)) delete plan.rate;
    for (const key of ['retryAfter', 'body'] as const) if (plan[key] === '') delete plan[key];
    out.failure = plan;
  }
  return out as Partial<SimOptions>;
}

/** The current configuration in kebab-case (what /admin/config answers). */
export function optionsToFlags(config: SimConfig): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const flag of SIM_FLAGS) {
    const value = flag.target.startsWith('failure.')
      ? (config.failure as Record<string, unknown>)[flag.target.slice(8)]
      : (config as unknown as Record<string, unknown>)[flag.target];
    if (value !== undefined) out[flag.name] = value;
  }
  return out;
}
