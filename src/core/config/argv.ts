/**
 * A pure command-line parser driven by the flag table. It turns argv into a partial, nested config
 * object (the overrides) without validating values: the schema does that, and load.ts blames the
 * flag that supplied a bad one. Only syntax errors (unknown flag, missing value) are raised here.
 * argv-tokens.ts splits argv into flag tokens; the readers here apply them to the flag table.
 */
import { type FlagToken, FlagValues, tokenizeArgv } from './argv-tokens.ts';
import { type ConfigOverrides, getPath, parseBool, setPath, toNumber } from './config-values.ts';
import { ConfigError, closest } from './errors.ts';
import { FLAG_BY_NAME, type FlagSpec, metavar } from './flags.ts';
import { commandLineRefusal } from './secrets.ts';

export { type ConfigOverrides, getPath, parseBool, setPath, toNumber } from './config-values.ts';

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
  /** `--demo`: simulated engines when no worker is configured. */
  demo: boolean;
  /** Config path → where its value came from, for error messages. */
  origins: Map<string, FlagOrigin>;
  /** Ignored or deprecated flags that were used. */
  warnings: string[];
  /** Every flag as spelled, in order (dialect.ts tells production-stack spellings from the rest). */
  spelled: string[];
}

export interface ParseOptions {
  /** Name the values after this environment variable instead of the flag (load.ts parses env with this). */
  readonly source?: string;
}

const ROUTING_LOGIC: Readonly<Record<string, { path: string; value: unknown }>> = {
  roundrobin: { path: 'policy.name', value: 'round_robin' },
  session: { path: 'policy.name', value: 'consistent_hash' },
  prefixaware: { path: 'policy.name', value: 'cache_aware' },
  kvaware: { path: 'policy.name', value: 'cache_aware' },
  disaggregated_prefill: { path: 'pd.enabled', value: true },
  disaggregated_prefill_orchestrated: { path: 'pd.enabled', value: true },
};

/** SMG's subcommand: `smg launch --worker-urls ...` reads as `--worker-urls ...`. */
const LAUNCH = 'launch';

export function parseArgv(argv: readonly string[]): ParsedArgs {
  return parseFlagTokens(argv[0] === LAUNCH ? argv.slice(1) : argv);
}

/** What `--routing-logic kvaware` really does here, said each time it is used. */
const KVAWARE_WARNING =
  'routes with cache_aware: a prefix tree of the prompts this router sent to each worker, ' +
  "not a lookup in LMCache's KV cache (no LMCache controller is asked)";

/** The state the readers of one parse share: the result so far, and whom to blame. */
interface Parse {
  readonly out: ParsedArgs;
  /** ParseOptions.source: the environment variable the tokens came from. */
  readonly source: string | undefined;
}

/** One flag being read: its table row, its name as spelled, and what it may take as its value. */
interface FlagUse {
  readonly spec: FlagSpec;
  readonly name: string;
  readonly inline: string | undefined;
  readonly values: FlagValues;
}

/** A value for a config path, and who gave it (the flag as spelled, the raw text). */
interface Setting {
  readonly path: string;
  readonly value: unknown;
  readonly name: string;
  readonly raw: string;
}

export function parseFlagTokens(argv: readonly string[], options: ParseOptions = {}): ParsedArgs {
  const parse: Parse = {
    out: {
      overrides: {},
      help: false,
      checkConfig: false,
      version: false,
      demo: false,
      origins: new Map(),
      warnings: [],
      spelled: [],
    },
    source: options.source,
  };
  let previous: string | undefined;
  for (const token of tokenizeArgv(argv)) {
    if (token.kind === 'stray') rejectStray(parse, token.text, previous);
    applyFlag(parse, token);
    previous = token.name;
  }
  return parse.out;
}

function fail(parse: Parse, message: string, blame: { flag: string; path?: string | undefined }): never {
  const { flag, path } = blame;
  throw new ConfigError(message, { flag: parse.source ?? flag, ...(path ? { path } : {}) });
}

/** "--port abc" on the command line, "VLLM_ROUTER_PORT=abc" from the environment. */
function describe(parse: Parse, name: string, raw: string): string {
  return parse.source ? `${parse.source}=${raw}` : `${name} ${raw}`;
}

/** An argument no flag took. `previous` is the flag before it, if any. */
function rejectStray(parse: Parse, text: string, previous: string | undefined): never {
  const after = previous ? ` after ${previous}` : '';
  const takesNoValue = previous && FLAG_BY_NAME.get(previous)?.kind === 'bool';
  const hint = takesNoValue ? ` (${previous} takes no value; write ${previous}=${text})` : '';
  return fail(parse, `unexpected argument "${text}"${after}${hint}`, { flag: previous ?? text });
}

/** Looks the flag up, reads its value, and rejects any argument after it that it did not take. */
function applyFlag(parse: Parse, token: FlagToken): void {
  const { name, inline } = token;
  const spec = FLAG_BY_NAME.get(name);
  if (!spec) {
    const near = closest(name, FLAG_BY_NAME.keys());
    fail(parse, `unknown flag ${name}${near ? ` (did you mean ${near}?)` : ''}`, { flag: name });
  }
  parse.out.spelled.push(name);
  const values = new FlagValues(token.values);
  if (spec.kind === 'custom') readCustom(parse, { spec, name, inline, values });
  else readFlag(parse, { spec, name, inline, values });
  const extra = values.peek();
  if (extra !== undefined) rejectStray(parse, extra, name);
}

/** The flag's one value: the inline `=value`, else the next argument; fails when there is none. */
function takeValue(parse: Parse, use: FlagUse, placeholder = metavar(use.spec)): string {
  if (use.inline !== undefined) return use.inline;
  const next = use.values.take();
  if (next === undefined) {
    const shown = placeholder ? ` (${placeholder})` : '';
    return fail(parse, `${use.name} requires a value${shown}`, { flag: use.name, path: use.spec.path });
  }
  return next;
}

/** A list flag's values: the inline `=value` alone, else every argument up to the next flag. */
function takeList(use: FlagUse): string[] {
  return use.inline !== undefined ? [use.inline] : use.values.takeAll();
}

function set(parse: Parse, { path, value, name, raw }: Setting): void {
  setPath(parse.out.overrides, path, value);
  parse.out.origins.set(path, { name: parse.source ?? name, raw });
}

/** Lists append to what earlier flags (`--worker-urls a --worker-urls b`) set. */
function append(parse: Parse, setting: Setting & { readonly value: readonly unknown[] }): void {
  const existing = getPath(parse.out.overrides, setting.path.split('.'));
  set(parse, { ...setting, value: [...(Array.isArray(existing) ? existing : []), ...setting.value] });
}

/** The value of a flag of any kind but custom, and its raw text for error messages. */
function readValue(parse: Parse, use: FlagUse): { value: unknown; raw: string } {
  const { spec, name, inline } = use;
  switch (spec.kind) {
    case 'bool': {
      const raw = inline ?? 'true';
      const b = parseBool(raw);
      if (b === undefined)
        fail(parse, `${describe(parse, name, raw)}: must be true or false`, { flag: name, path: spec.path });
      return { value: spec.negate ? !b : b, raw };
    }
    case 'list':
    case 'csv-list': {
      const tokens = spec.kind === 'list' ? takeList(use) : [takeValue(parse, use)];
      const parts = tokens.flatMap((t) => t.split(',')).map((t) => t.trim());
      const items = parts.filter((t) => t !== '');
      return { value: spec.items === 'int' ? items.map(toNumber) : items, raw: tokens.join(' ') };
    }
    default: {
      const raw = takeValue(parse, use);
      return { value: spec.kind === 'string' ? raw : toNumber(raw), raw };
    }
  }
}

/** Refused flags fail; ignored and deprecated ones add a warning. */
function checkStatus(parse: Parse, { spec, name }: FlagUse, value: unknown): void {
  const refusal = parse.source === undefined ? commandLineRefusal(spec, name, value) : undefined;
  if (refusal !== undefined) fail(parse, refusal, { flag: name });
  if (spec.refused !== undefined) {
    const n = typeof value === 'number' && Number.isInteger(value) ? String(value + 1) : 'N+1';
    fail(parse, `${name} is not supported: ${spec.refused.replace('{N+1}', n)}`, { flag: name });
  }
  if (spec.ignored !== undefined)
    parse.out.warnings.push(`${name} is accepted for compatibility and ignored: ${spec.ignored}`);
  if (spec.deprecated !== undefined) parse.out.warnings.push(`${name} is deprecated: ${spec.deprecated}`);
}

/** Flags that steer the CLI itself; false when the flag is not one of them. */
function applyMeta(out: ParsedArgs, spec: FlagSpec, value: unknown): boolean {
  switch (spec.meta) {
    case 'config':
      out.configFile = String(value);
      return true;
    case 'check-config':
      out.checkConfig = value === true;
      return true;
    case 'help':
      out.help = value === true;
      return true;
    case 'version':
      out.version = value === true;
      return true;
    case 'demo':
      out.demo = value === true;
      return true;
    default:
      return false;
  }
}

/** Reads a flag of any kind but custom and stores its value (or steers the CLI, for meta flags). */
function readFlag(parse: Parse, use: FlagUse): void {
  const { spec, name } = use;
  const { value, raw } = readValue(parse, use);
  checkStatus(parse, use, value);
  if (applyMeta(parse.out, spec, value) || spec.path === undefined) return;
  if (Array.isArray(value)) append(parse, { path: spec.path, value, name, raw });
  else set(parse, { path: spec.path, value, name, raw });
}

function readCustom(parse: Parse, use: FlagUse): void {
  switch (use.spec.custom) {
    case 'prefill':
      readPrefill(parse, use);
      return;
    case 'service-discovery':
      readServiceDiscovery(parse, use);
      return;
    case 'routing-logic':
      readRoutingLogic(parse, use);
      return;
  }
}

/** --prefill URL [BOOTSTRAP_PORT|none]: the second token is taken only if it is a port or none. */
function readPrefill(parse: Parse, use: FlagUse): void {
  const url = takeValue(parse, use, 'URL');
  const next = use.values.peek();
  let port: number | null = null;
  if (next !== undefined && (/^\d+$/.test(next) || next.toLowerCase() === 'none')) {
    use.values.take();
    port = next.toLowerCase() === 'none' ? null : Number(next);
  }
  const raw = port === null ? url : `${url} ${port}`;
  append(parse, { path: 'pd.prefill', value: [{ url, bootstrapPort: port }], name: use.name, raw });
}

/** A bare switch in vllm-router (Kubernetes), a value in production-stack: static | k8s. */
function readServiceDiscovery(parse: Parse, use: FlagUse): void {
  let raw = use.inline;
  const next = use.values.peek();
  if (raw === undefined && (next === 'static' || next === 'k8s')) raw = use.values.take();
  const on = raw === undefined ? true : parseBool(raw);
  const setting = { path: 'discovery.mode', name: use.name, raw: raw ?? '' };
  if (on === true) set(parse, { ...setting, value: 'k8s' });
  else if (on === undefined) set(parse, { ...setting, value: raw });
  // --service-discovery=false: nothing to discover
}

function readRoutingLogic(parse: Parse, use: FlagUse): void {
  const raw = takeValue(parse, use);
  const target = Object.hasOwn(ROUTING_LOGIC, raw) ? ROUTING_LOGIC[raw] : undefined;
  if (!target) {
    const valid = Object.keys(ROUTING_LOGIC).join(', ');
    fail(parse, `${describe(parse, use.name, raw)}: must be one of ${valid}`, { flag: use.name });
  }
  if (raw === 'kvaware') parse.out.warnings.push(`${describe(parse, use.name, raw)} ${KVAWARE_WARNING}`);
  set(parse, { path: target.path, value: target.value, name: use.name, raw });
}
