/**
 * A pure command-line parser driven by the flag table. It turns argv into a partial, nested config
 * object (the overrides) without validating values: the schema does that, and load.ts blames the
 * flag that supplied a bad one. Only syntax errors (unknown flag, missing value) are raised here.
 */
import { ConfigError, closest } from './errors.ts';
import { FLAG_BY_NAME, type FlagSpec, metavar } from './flags.ts';

/** A partial config: the nested shape of RouterConfig with only the values that were given. */
export type ConfigOverrides = { [key: string]: unknown };

/** Who set a config path: the flag (or environment variable) as spelled, and the raw value. */
export interface FlagOrigin {
  readonly name: string;
  readonly raw: string;
}

export interface ParsedArgs {
  overrides: ConfigOverrides;
  configFile?: string;
  help: boolean;
  checkConfig: boolean;
  version: boolean;
  /** Config path → where its value came from, for error messages. */
  origins: Map<string, FlagOrigin>;
  /** Ignored or deprecated flags that were used. */
  warnings: string[];
}

export interface ParseOptions {
  /** Name the values after this environment variable instead of the flag (load.ts parses env with this). */
  readonly source?: string;
}

const NUMERIC = /^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/;
const ROUTING_LOGIC: Readonly<Record<string, { path: string; value: unknown }>> = {
  roundrobin: { path: 'policy.name', value: 'round_robin' },
  session: { path: 'policy.name', value: 'consistent_hash' },
  prefixaware: { path: 'policy.name', value: 'cache_aware' },
  kvaware: { path: 'policy.name', value: 'cache_aware' },
  disaggregated_prefill: { path: 'pd.enabled', value: true },
};

/** A number when the text is one; otherwise the text itself, so the schema can name the problem. */
export function toNumber(raw: string): number | string {
  return NUMERIC.test(raw.trim()) ? Number(raw) : raw;
}

export function parseBool(raw: string): boolean | undefined {
  const v = raw.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(v)) return true;
  if (['false', '0', 'no', 'off'].includes(v)) return false;
  return undefined;
}

function isFlagToken(token: string): boolean {
  return token.length > 1 && token.startsWith('-') && !NUMERIC.test(token);
}

export function getPath(obj: unknown, path: readonly (string | number)[]): unknown {
  let cur = obj;
  for (const key of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string | number, unknown>)[key];
  }
  return cur;
}

export function setPath(obj: ConfigOverrides, dotPath: string, value: unknown): void {
  const keys = dotPath.split('.');
  let cur = obj;
  for (const key of keys.slice(0, -1)) {
    const next = cur[key];
    if (next === null || typeof next !== 'object' || Array.isArray(next)) cur[key] = {};
    cur = cur[key] as ConfigOverrides;
  }
  cur[keys[keys.length - 1]!] = value;
}

export function parseArgv(argv: readonly string[]): ParsedArgs {
  return parseFlagTokens(argv);
}

export function parseFlagTokens(argv: readonly string[], options: ParseOptions = {}): ParsedArgs {
  const out: ParsedArgs = {
    overrides: {},
    help: false,
    checkConfig: false,
    version: false,
    origins: new Map(),
    warnings: [],
  };
  let i = 0;
  let previous: string | undefined;

  function fail(message: string, flag: string, path?: string): never {
    throw new ConfigError(message, { flag: options.source ?? flag, ...(path ? { path } : {}) });
  }
  // "--port abc" on the command line, "VLLM_ROUTER_PORT=abc" from the environment.
  const describe = (name: string, raw: string) =>
    options.source ? `${options.source}=${raw}` : `${name} ${raw}`;
  const peek = () => argv[i + 1];
  const takeValue = (name: string, spec: FlagSpec, inline: string | undefined): string => {
    if (inline !== undefined) return inline;
    const next = peek();
    if (next === undefined || isFlagToken(next)) {
      return fail(`${name} requires a value${metavar(spec) ? ` (${metavar(spec)})` : ''}`, name, spec.path);
    }
    i++;
    return next;
  };
  const takeList = (inline: string | undefined): string[] => {
    if (inline !== undefined) return [inline];
    const values: string[] = [];
    for (let next = peek(); next !== undefined && !isFlagToken(next); next = peek()) {
      values.push(next);
      i++;
    }
    return values;
  };
  const set = (path: string, value: unknown, name: string, raw: string) => {
    setPath(out.overrides, path, value);
    out.origins.set(path, { name: options.source ?? name, raw });
  };
  const append = (path: string, values: readonly unknown[], name: string, raw: string) => {
    const existing = getPath(out.overrides, path.split('.'));
    set(path, [...(Array.isArray(existing) ? existing : []), ...values], name, raw);
  };

  for (; i < argv.length; i++) {
    const token = argv[i]!;
    if (token === '--') continue; // `npm start -- --port 1`, `deno task start -- --port 1`
    if (!isFlagToken(token)) {
      const after = previous ? ` after ${previous}` : '';
      const takesNoValue = previous && FLAG_BY_NAME.get(previous)?.kind === 'bool';
      const hint = takesNoValue ? ` (${previous} takes no value; write ${previous}=${token})` : '';
      fail(`unexpected argument "${token}"${after}${hint}`, previous ?? token);
    }
    const eq = token.startsWith('--') ? token.indexOf('=') : -1;
    const name = eq > 0 ? token.slice(0, eq) : token;
    const inline = eq > 0 ? token.slice(eq + 1) : undefined;
    const spec = FLAG_BY_NAME.get(name);
    if (!spec) {
      const near = closest(name, FLAG_BY_NAME.keys());
      fail(`unknown flag ${name}${near ? ` (did you mean ${near}?)` : ''}`, name);
    }
    previous = name;
    readFlag(spec, name, inline);
  }
  return out;

  function readFlag(spec: FlagSpec, name: string, inline: string | undefined): void {
    if (spec.kind === 'custom') {
      readCustom(spec, name, inline);
      return;
    }
    let value: unknown;
    let raw: string;
    switch (spec.kind) {
      case 'bool': {
        raw = inline ?? 'true';
        const b = parseBool(raw);
        if (b === undefined) fail(`${describe(name, raw)}: must be true or false`, name, spec.path);
        value = spec.negate ? !b : b;
        break;
      }
      case 'list':
      case 'csv-list': {
        const tokens = spec.kind === 'list' ? takeList(inline) : [takeValue(name, spec, inline)];
        raw = tokens.join(' ');
        const parts = tokens.flatMap((t) => t.split(',')).map((t) => t.trim());
        const items = parts.filter((t) => t !== '');
        value = spec.items === 'int' ? items.map(toNumber) : items;
        break;
      }
      default:
        raw = takeValue(name, spec, inline);
        value = spec.kind === 'string' ? raw : toNumber(raw);
    }
    if (spec.refused !== undefined) {
      const n = typeof value === 'number' && Number.isInteger(value) ? String(value + 1) : 'N+1';
      fail(`${name} is not supported: ${spec.refused.replace('{N+1}', n)}`, name);
    }
    if (spec.ignored !== undefined)
      out.warnings.push(`${name} is accepted for compatibility and ignored: ${spec.ignored}`);
    if (spec.deprecated !== undefined) out.warnings.push(`${name} is deprecated: ${spec.deprecated}`);
    switch (spec.meta) {
      case 'config':
        out.configFile = String(value);
        return;
      case 'check-config':
        out.checkConfig = value === true;
        return;
      case 'help':
        out.help = value === true;
        return;
      case 'version':
        out.version = value === true;
        return;
    }
    if (spec.path === undefined) return;
    if (Array.isArray(value)) append(spec.path, value, name, raw);
    else set(spec.path, value, name, raw);
  }

  function readCustom(spec: FlagSpec, name: string, inline: string | undefined): void {
    switch (spec.custom) {
      case 'prefill': {
        // --prefill URL [BOOTSTRAP_PORT|none]: the second token is taken only if it is a port or none.
        const url = takeValue(name, { ...spec, metavar: 'URL' }, inline);
        const next = peek();
        let port: number | null = null;
        if (next !== undefined && (/^\d+$/.test(next) || next.toLowerCase() === 'none')) {
          i++;
          port = next.toLowerCase() === 'none' ? null : Number(next);
        }
        append('pd.prefill', [{ url, bootstrapPort: port }], name, port === null ? url : `${url} ${port}`);
        return;
      }
      case 'service-discovery': {
        // A bare switch in vllm-router (Kubernetes), a value in production-stack: static | k8s.
        let raw = inline;
        if (raw === undefined && (peek() === 'static' || peek() === 'k8s')) raw = argv[++i];
        const on = raw === undefined ? true : parseBool(raw);
        if (on === true) set('discovery.mode', 'k8s', name, raw ?? '');
        else if (on === undefined) set('discovery.mode', raw, name, raw ?? '');
        return; // --service-discovery=false: nothing to discover
      }
      case 'routing-logic': {
        const raw = takeValue(name, spec, inline);
        const target = Object.hasOwn(ROUTING_LOGIC, raw) ? ROUTING_LOGIC[raw] : undefined;
        if (!target)
          fail(`${describe(name, raw)}: must be one of ${Object.keys(ROUTING_LOGIC).join(', ')}`, name);
        set(target.path, target.value, name, raw);
        return;
      }
    }
  }
}
