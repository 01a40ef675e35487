/**
 * Whose command line this is: vLLM production-stack's, or the vLLM Router's (and SMG's). They
 * disagree about retries. The vLLM Router and SMG retry by default; production-stack retries only
 * with `--enable-retries`, and without it ignores its other retry flags, "so a shared config
 * template carrying them cannot change behaviour or block startup".
 *
 * What production-stack's `--max-retries N` means, from its retry change (vllm-project/
 * production-stack #939, src/vllm_router/services/request_service/retry.py): `RetryConfig.from_args`
 * builds `max_attempts=args.max_retries`, and "max_attempts counts the initial request, so 1
 * disables retrying and 5 allows the initial attempt plus four retries". That is exactly our
 * `retry.maxRetries` (attempts, the first included), so N maps to N, not N+1. Without
 * `--enable-retries` its config is the default one: a single attempt.
 *
 * Rules (command-line flags only: environment variables and config files use the vLLM Router
 * names, and never decide the dialect):
 * - production-stack when a production-stack spelling is used (`--static-backends`,
 *   `--routing-logic`, `--service-discovery static`, `--enable-retries`, `--max-retries`,
 *   `--initial-backoff-ms`, `--max-backoff-ms`, `--backoff-multiplier`, `--jitter-factor`) and
 *   no vLLM Router retry flag (`--retry-*`, `--disable-retries`, `--retryable-status-codes`) is:
 *   one of those says the operator wants the vLLM Router's retry semantics, so that dialect wins.
 * - production-stack without `--enable-retries`: retries off (retry.disabled, from the command
 *   line, so over the environment and config files too), and the five production-stack retry
 *   flags are dropped unvalidated, with a warning naming them.
 * - production-stack with `--enable-retries`: retries on, those flags applied and validated.
 */
import type { ParsedArgs } from './argv.ts';
import { type ConfigOverrides, getPath, setPath } from './config-values.ts';
import { FLAG_BY_NAME } from './flags.ts';

export type DialectName = 'production-stack' | 'vllm-router';

/** The detected dialect, and why: `--check-config` prints it as its top-level `dialect` field. */
export interface Dialect {
  readonly name: DialectName;
  /** The flags that decided it, as spelled. */
  readonly because: readonly string[];
  /** How the dialect left retries, in words. */
  readonly retries: string;
}

/** production-stack's own retry flags (aliases of the `--retry-*` flags in the table). */
const PS_RETRY_FLAGS = [
  '--max-retries',
  '--initial-backoff-ms',
  '--max-backoff-ms',
  '--backoff-multiplier',
  '--jitter-factor',
] as const;
const PS_FLAGS: ReadonlySet<string> = new Set([
  '--static-backends',
  '--routing-logic',
  '--enable-retries',
  ...PS_RETRY_FLAGS,
]);
/** Retry flags only the vLLM Router (and SMG) spell this way. */
const VLLM_ROUTER_RETRY_FLAGS: ReadonlySet<string> = new Set([
  '--retry-max-retries',
  '--retry-initial-backoff-ms',
  '--retry-max-backoff-ms',
  '--retry-backoff-multiplier',
  '--retry-jitter-factor',
  '--disable-retries',
  '--retryable-status-codes',
]);

const unique = (names: readonly string[]) => [...new Set(names)];

/** The production-stack spellings on the command line (`--service-discovery` only with `static`). */
function productionStackFlags(parsed: ParsedArgs): string[] {
  const staticDiscovery = getPath(parsed.overrides, ['discovery', 'mode']) === 'static';
  return unique(
    parsed.spelled.flatMap((name) => {
      if (name === '--service-discovery') return staticDiscovery ? ['--service-discovery static'] : [];
      return PS_FLAGS.has(name) ? [name] : [];
    }),
  );
}

export function detectDialect(parsed: ParsedArgs): Dialect {
  const ps = productionStackFlags(parsed);
  const router = unique(parsed.spelled.filter((name) => VLLM_ROUTER_RETRY_FLAGS.has(name)));
  if (ps.length === 0 || router.length > 0) {
    const over = ps.length > 0 ? ` (they win over production-stack's ${ps.join(', ')})` : '';
    return {
      name: 'vllm-router',
      because: router.length > 0 ? router : ['no production-stack flag'],
      retries: `on by default: vLLM Router retry flags${over}`,
    };
  }
  const enabled = getPath(parsed.overrides, ['retry', 'disabled']) === false;
  return {
    name: 'production-stack',
    because: ps,
    retries: enabled ? 'on: --enable-retries' : 'off: no --enable-retries (one attempt per request)',
  };
}

/** Removes a value the command line set, and where it came from. */
function drop(parsed: ParsedArgs, path: string): void {
  const keys = path.split('.');
  const parent = getPath(parsed.overrides, keys.slice(0, -1));
  if (parent !== null && typeof parent === 'object') delete (parent as ConfigOverrides)[keys.at(-1) ?? ''];
  parsed.origins.delete(path);
}

/**
 * Detects the dialect and applies production-stack's retry rule to the command line's settings
 * (in place): without `--enable-retries`, retries off and its retry flags dropped with a warning.
 */
export function applyDialect(parsed: ParsedArgs): Dialect {
  const dialect = detectDialect(parsed);
  if (dialect.name !== 'production-stack' || getPath(parsed.overrides, ['retry', 'disabled']) === false) {
    return dialect;
  }
  const ignored = unique(
    parsed.spelled.filter((name) => (PS_RETRY_FLAGS as readonly string[]).includes(name)),
  );
  for (const flag of ignored) {
    const path = FLAG_BY_NAME.get(flag)?.path;
    if (path !== undefined) drop(parsed, path);
  }
  setPath(parsed.overrides, 'retry.disabled', true);
  if (ignored.length > 0) {
    parsed.warnings.push(
      `${ignored.join(', ')} ignored: --enable-retries is absent, and on a production-stack command line ` +
        'retries are off without it (one attempt per request; its retry flags are neither validated nor applied)',
    );
  }
  return dialect;
}
