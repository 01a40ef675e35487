// Command line of the simulated engine (pure: no I/O). Flags come from the table in config.ts;
// `--name value` and `--name=value` both work, and SIM_<NAME> environment variables fill gaps.
import {
  findFlag,
  flagsToOptions,
  parseFlagValue,
  resolveOptions,
  SIM_FLAGS,
  type SimFlag,
} from './config.ts';
import type { SimOptions } from './types.ts';

export interface SimCommandLine {
  help: boolean;
  quiet: boolean;
  host: string;
  port: number;
  /** Also serve the Mooncake bootstrap `/query` on this port (unset: only on `port`). */
  bootstrapPort?: number;
  options: Partial<SimOptions>;
}

const RUNNER_FLAGS: readonly SimFlag[] = [
  { name: 'port', type: 'int', target: 'port', help: 'listen port, 0 = ephemeral (8000)' },
  { name: 'host', type: 'string', target: 'host', help: 'listen address (127.0.0.1)' },
  {
    name: 'bootstrap-port',
    type: 'int',
    target: 'bootstrapPort',
    help: 'also serve the Mooncake bootstrap /query on this port (e.g. 8998)',
  },
  { name: 'quiet', type: 'bool', target: 'quiet', help: 'no startup line' },
  { name: 'help', type: 'bool', target: 'help', help: 'show this help' },
];

const BOOL_WORDS = new Set(['1', '0', 'true', 'false', 'yes', 'no', 'on', 'off']);

function lookup(name: string): SimFlag | undefined {
  return RUNNER_FLAGS.find((f) => f.name === name) ?? findFlag(name);
}

/** Parses argv (without node and script). Throws a RangeError naming the offending flag. */
export function parseSimCommandLine(
  argv: readonly string[],
  env: Record<string, string | undefined> = {},
): SimCommandLine {
  const given = new Map<string, unknown>();
  const models: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') continue;
    if (!arg.startsWith('--'))
      throw new RangeError(`unexpected argument ${JSON.stringify(arg)} (flags start with --)`);
    const eq = arg.indexOf('=');
    const name = eq >= 0 ? arg.slice(2, eq) : arg.slice(2);
    const flag = lookup(name);
    if (!flag) throw new RangeError(`unknown flag --${name} (see --help)`);
    let raw: string;
    if (eq >= 0) raw = arg.slice(eq + 1);
    else if (flag.type === 'bool') raw = BOOL_WORDS.has(argv[i + 1] ?? '') ? argv[++i]! : 'true';
    else {
      const next = argv[i + 1];
      if (next === undefined || next.startsWith('--')) throw new RangeError(`flag --${name} needs a value`);
      raw = next;
      i++;
    }
    if (flag.name === 'model') models.push(...(parseFlagValue(flag, raw) as string[]));
    else given.set(flag.name, raw);
  }
  if (models.length > 0) given.set('model', models);
  for (const flag of [...RUNNER_FLAGS, ...SIM_FLAGS]) {
    const value = env[`SIM_${flag.name.toUpperCase().replaceAll('-', '_')}`];
    if (!given.has(flag.name) && value !== undefined && value !== '') given.set(flag.name, value);
  }

  const runner = (name: string) => {
    const raw = given.get(name);
    given.delete(name);
    return raw === undefined ? undefined : parseFlagValue(lookup(name)!, raw);
  };
  const help = (runner('help') as boolean | undefined) ?? false;
  const quiet = (runner('quiet') as boolean | undefined) ?? false;
  const host = (runner('host') as string | undefined) ?? '127.0.0.1';
  const port = (runner('port') as number | undefined) ?? 8000;
  if (port > 65535) throw new RangeError(`invalid value for --port: ${port}`);
  const bootstrapPort = runner('bootstrap-port') as number | undefined;
  if (bootstrapPort !== undefined && bootstrapPort > 65535) {
    throw new RangeError(`invalid value for --bootstrap-port: ${bootstrapPort}`);
  }
  const options = flagsToOptions(Object.fromEntries(given), resolveOptions({ id: 'cli' }));
  if (options.id === undefined && port !== 0) options.id = `sim-${port}`;
  resolveOptions(options); // validates the combination
  return { help, quiet, host, port, ...(bootstrapPort === undefined ? {} : { bootstrapPort }), options };
}

export function simHelp(): string {
  const rows = [...RUNNER_FLAGS, ...SIM_FLAGS].map((f) => {
    const value = f.type === 'bool' ? '' : ` <${f.type === 'list' ? 'name[,name]' : f.type}>`;
    return `  --${f.name}${value}`.padEnd(34) + f.help;
  });
  return [
    'Simulated vLLM engine (OpenAI-compatible server) for tests, demos and benchmarks.',
    '',
    'usage: npm run sim -- [--flag value | --flag=value]...',
    '',
    ...rows,
    '',
    'Every flag can also come from SIM_<FLAG> (upper case, dashes as underscores), e.g. SIM_PORT=8001.',
    'The same settings (minus port/host) change at run time: POST /admin/config {"fail-mode":"none"}.',
  ].join('\n');
}
