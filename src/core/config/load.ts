/**
 * Resolves the configuration from its sources, highest first: command-line flags, environment
 * variables, the ROUTER_CONFIG variable (JSON), `--config FILE` (JSON), schema defaults. Sources
 * are deep-merged by path (objects merge, lists and values replace); the schema validates the
 * result, and each complaint names where the bad value came from: the flag, the variable, or the
 * file and field.
 */
import {
  type ConfigOverrides,
  type FlagOrigin,
  getPath,
  type ParsedArgs,
  parseArgv,
  parseFlagTokens,
} from './argv.ts';
import { applyDialect, type Dialect, detectDialect } from './dialect.ts';
import { ConfigError, type ConfigIssue, closest, formatPath } from './errors.ts';
import { FLAG_BY_PATH, FLAGS, type FlagSpec } from './flags.ts';
import { checkRouterConfig, defaultRouterConfig, type RouterConfig } from './schema.ts';
import { quotableValue } from './secrets.ts';

export interface ResolveConfigOptions {
  argv: readonly string[];
  env: Record<string, string | undefined>;
  readTextFile: (path: string) => string;
}

export interface ResolvedConfig {
  config: RouterConfig;
  help: boolean;
  checkConfig: boolean;
  version: boolean;
  /** `--demo` was given. */
  demo: boolean;
  /** Things worth telling the operator that do not stop startup (ignored flags, unknown variables). */
  warnings: string[];
  /** Whose command line it is (production-stack or vLLM Router), and why: see dialect.ts. */
  dialect: Dialect;
}

/** Worker deployments (Cloudflare) pass the whole configuration as JSON in this variable. */
export const ROUTER_CONFIG_ENV = 'ROUTER_CONFIG';

type Layer =
  | { kind: 'flags' | 'env'; overrides: ConfigOverrides; origins: ReadonlyMap<string, FlagOrigin> }
  | { kind: 'json'; label: string; overrides: ConfigOverrides };

export function resolveConfig({ argv, env, readTextFile }: ResolveConfigOptions): ResolvedConfig {
  const cli = parseArgv(argv);
  const base = { help: cli.help, checkConfig: cli.checkConfig, version: cli.version, demo: cli.demo };
  if (cli.help || cli.version) {
    return { ...base, config: defaultRouterConfig(), warnings: cli.warnings, dialect: detectDialect(cli) };
  }
  const dialect = applyDialect(cli);

  const fromEnv = parseEnv(env);
  const layers: Layer[] = [
    { kind: 'flags', overrides: cli.overrides, origins: cli.origins },
    { kind: 'env', overrides: fromEnv.overrides, origins: fromEnv.origins },
  ];
  const inline = env[ROUTER_CONFIG_ENV];
  if (inline !== undefined && inline.trim() !== '') {
    layers.push({
      kind: 'json',
      label: ROUTER_CONFIG_ENV,
      overrides: parseJsonConfig(inline, ROUTER_CONFIG_ENV),
    });
  }
  const file = cli.configFile ?? fromEnv.configFile;
  if (file !== undefined)
    layers.push({ kind: 'json', label: file, overrides: readConfigFile(file, readTextFile) });

  const merged = layers.reduceRight<ConfigOverrides>((acc, layer) => deepMerge(acc, layer.overrides), {});
  const result = checkRouterConfig(merged);
  if (!result.ok) throw explain(result.issues, layers, merged);
  return { ...base, config: result.config, warnings: [...cli.warnings, ...fromEnv.warnings], dialect };
}

// ---------------------------------------------------------------------------------------------
// Environment

const LIST_SPLIT = /[\s,]+/;
/**
 * Kubernetes injects service links into every pod: a Service named vllm-router yields
 * VLLM_ROUTER_PORT=tcp://10.0.0.1:80, VLLM_ROUTER_SERVICE_HOST, VLLM_ROUTER_PORT_80_TCP_ADDR, ...
 * Those are not settings, and must not stop the router from starting.
 */
const SERVICE_LINK = /^(tcp|udp|sctp):\/\//;
const KUBERNETES_LINK_VARS = /_SERVICE_(HOST|PORT)(_|$)|_PORT_\d+_(TCP|UDP|SCTP)(_|$)/;

/** Rewrites one variable as the command-line tokens of its flag, so both share one parser. */
function envTokens(spec: FlagSpec, value: string): string[] {
  if (spec.kind === 'list') return [spec.flag, ...value.split(LIST_SPLIT).filter((t) => t !== '')];
  if (spec.custom === 'prefill') {
    // "URL [PORT|none] URL ..." → --prefill URL PORT --prefill URL
    return value
      .split(LIST_SPLIT)
      .filter((t) => t !== '')
      .flatMap((t) => (/^\d+$/.test(t) || t.toLowerCase() === 'none' ? [t] : [spec.flag, t]));
  }
  return [`${spec.flag}=${value.trim()}`];
}

/** What the environment variables set: overrides and their origins, like the command line's. */
interface EnvSettings {
  overrides: ConfigOverrides;
  origins: Map<string, FlagOrigin>;
  warnings: string[];
  configFile: string | undefined;
}

function parseEnv(env: Record<string, string | undefined>): EnvSettings {
  const settings: EnvSettings = { overrides: {}, origins: new Map(), warnings: [], configFile: undefined };
  const known = new Set<string>();
  for (const spec of FLAGS) {
    // Legacy names come first in `env`, so the canonical VLLM_ROUTER_<FLAG> wins when both are set.
    for (const name of spec.env ?? []) {
      known.add(name);
      readEnvVar(settings, { spec, name, value: env[name] });
    }
  }
  settings.warnings.push(...unknownEnvWarnings(env, known));
  return settings;
}

/** Parses one variable that stands for `spec` as its flag's tokens, and merges what it set. */
function readEnvVar(
  settings: EnvSettings,
  { spec, name, value }: { spec: FlagSpec; name: string; value: string | undefined },
): void {
  if (value === undefined || value.trim() === '') return;
  if (SERVICE_LINK.test(value.trim()) && spec.kind !== 'string') {
    settings.warnings.push(
      `${name}=${value} ignored: it looks like a Kubernetes service link, not a ${spec.flag} value`,
    );
    return;
  }
  const parsed: ParsedArgs = parseFlagTokens(envTokens(spec, value), { source: name });
  settings.overrides = deepMerge(settings.overrides, parsed.overrides);
  for (const [path, origin] of parsed.origins) settings.origins.set(path, origin);
  settings.warnings.push(...parsed.warnings);
  settings.configFile = parsed.configFile ?? settings.configFile;
}

/** VLLM_ROUTER_* variables that stand for no flag (Kubernetes service links aside). */
function unknownEnvWarnings(env: Record<string, string | undefined>, known: ReadonlySet<string>): string[] {
  const warnings: string[] = [];
  for (const name of Object.keys(env)) {
    if (!name.startsWith('VLLM_ROUTER_') || known.has(name) || KUBERNETES_LINK_VARS.test(name)) continue;
    if (SERVICE_LINK.test(env[name] ?? '')) continue;
    const near = closest(name, known);
    warnings.push(`unknown environment variable ${name} ignored${near ? ` (did you mean ${near}?)` : ''}`);
  }
  return warnings;
}

// ---------------------------------------------------------------------------------------------
// JSON config (file or ROUTER_CONFIG)

function readConfigFile(path: string, readTextFile: (path: string) => string): ConfigOverrides {
  if (/\.ya?ml$/i.test(path))
    throw new ConfigError(`${path}: YAML config files are not supported yet; use JSON`);
  let text: string;
  try {
    text = readTextFile(path);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new ConfigError(`--config ${path}: cannot read the file: ${reason}`, {
      flag: '--config',
      cause: err,
    });
  }
  return parseJsonConfig(text, path);
}

function parseJsonConfig(text: string, label: string): ConfigOverrides {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new ConfigError(`${label}: invalid JSON: ${reason}`, { cause: err });
  }
  if (!isPlainObject(data))
    throw new ConfigError(`${label}: must be a JSON object shaped like the configuration`);
  // --check-config prints the detected dialect beside the settings: informational, not a setting.
  const { dialect: _printed, ...settings } = data;
  return settings;
}

// ---------------------------------------------------------------------------------------------
// Merging and blame

function isPlainObject(value: unknown): value is ConfigOverrides {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** `over` wins; nested objects merge key by key; lists and values replace. */
export function deepMerge(base: ConfigOverrides, over: ConfigOverrides): ConfigOverrides {
  const out: ConfigOverrides = { ...base };
  for (const [key, value] of Object.entries(over)) {
    if (value === undefined) continue;
    const prev = out[key];
    out[key] = isPlainObject(prev) && isPlainObject(value) ? deepMerge(prev, value) : value;
  }
  return out;
}

function startsWith(segments: readonly (string | number)[], dotPath: string): boolean {
  const keys = dotPath.split('.');
  return keys.length <= segments.length && keys.every((k, idx) => segments[idx] === k);
}

function hasPath(obj: unknown, segments: readonly (string | number)[]): boolean {
  return getPath(obj, segments) !== undefined;
}

/** One line naming the source of a bad value, or undefined if no source set that path. */
function blame(
  segments: readonly (string | number)[],
  message: string,
  layers: readonly Layer[],
  merged: ConfigOverrides,
): { line: string; flag?: string } | undefined {
  for (const layer of layers) {
    if (layer.kind === 'json') {
      if (hasPath(layer.overrides, segments))
        return { line: `${layer.label}: ${formatPath(segments)}: ${message}` };
      continue;
    }
    for (const [path, origin] of layer.origins) {
      if (!startsWith(segments, path)) continue;
      const value = getPath(merged, segments);
      const text = ['string', 'number', 'boolean'].includes(typeof value) ? String(value) : origin.raw;
      // Never quote a secret, or the password of a URL, back in an error message.
      const shown = quotableValue(String(segments.at(-1) ?? path), text);
      const where = layer.kind === 'env' ? `${origin.name}=${shown}` : `${origin.name} ${shown}`.trimEnd();
      return { line: `${where}: ${message}`, flag: origin.name };
    }
  }
  return undefined;
}

function explain(
  issues: readonly ConfigIssue[],
  layers: readonly Layer[],
  merged: ConfigOverrides,
): ConfigError {
  let first: { flag?: string; path: string } | undefined;
  const lines = issues.map((issue) => {
    // A cross-field complaint is pinned on whichever of the two fields a source actually set.
    const related = issue.related;
    const direct = blame(issue.segments, issue.message, layers, merged);
    const viaRelated =
      direct || !related ? undefined : blame(related.path.split('.'), related.message, layers, merged);
    const found = direct ?? viaRelated;
    const path = viaRelated && related ? related.path : issue.path;
    const flag = FLAG_BY_PATH.get(issue.segments.filter((s) => typeof s === 'string').join('.'))?.flag;
    first ??= { path, ...(found?.flag ? { flag: found.flag } : {}) };
    return found?.line ?? `${issue.path}${flag ? ` (${flag})` : ''}: ${issue.message}`;
  });
  return new ConfigError(lines.join('\n'), first ?? {});
}
