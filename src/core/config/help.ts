/**
 * `--help` text and the README flag reference, both generated from the flag table, with every
 * default read from the schema.
 */
import { getPath } from './argv.ts';
import { envName, FLAG_GROUPS, FLAGS, type FlagSpec, metavar } from './flags.ts';
import { defaultRouterConfig, type RouterConfig } from './schema.ts';

const PROGRAM = 'vllm-edge-router';
const WIDTH = 100;
const LEFT = 38;

/** The schema default behind a flag, as the user would type it; undefined when there is none. */
export function flagDefault(
  spec: FlagSpec,
  defaults: RouterConfig = defaultRouterConfig(),
): string | undefined {
  if (spec.path === undefined || spec.custom === 'prefill') return undefined;
  const value = getPath(defaults, spec.path.split('.'));
  if (value === undefined) return undefined;
  if (typeof value === 'boolean') return String(spec.negate ? !value : value);
  if (Array.isArray(value))
    return value.length === 0 ? undefined : value.join(spec.kind === 'csv-list' ? ',' : ' ');
  return String(value);
}

/** The help sentence plus what the table cannot say elsewhere (legacy variables, refusals). */
function description(spec: FlagSpec, code: (s: string) => string): string {
  let text = spec.help;
  if (spec.refused !== undefined) text += `: ${spec.refused.replace('{N+1}', 'N+1')}`;
  const extra = (spec.env ?? []).filter((name) => name !== envName(spec.flag));
  if (extra.length > 0) text += `. Also env ${extra.map(code).join(', ')}`;
  return text;
}

function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  if (line !== '') lines.push(line);
  return lines;
}

function groups(): [string, FlagSpec[]][] {
  return FLAG_GROUPS.map(
    (name) => [name, FLAGS.filter((s) => s.group === name)] as [string, FlagSpec[]],
  ).filter(([, specs]) => specs.length > 0);
}

export function renderHelp(): string {
  const defaults = defaultRouterConfig();
  const out: string[] = [
    `Usage: ${PROGRAM} [OPTIONS]`,
    '',
    'Routes OpenAI-compatible requests across a fleet of vLLM, SGLang or other engines.',
    '',
    ...wrap(
      'Settings are read from, highest first: these flags; environment variables VLLM_ROUTER_<FLAG> ' +
        '(e.g. VLLM_ROUTER_WORKER_URLS="http://a:8000 http://b:8000"); the ROUTER_CONFIG variable and ' +
        '--config FILE (JSON shaped like the --check-config output); built-in defaults. List flags take ' +
        'space- or comma-separated values and may be repeated.',
      WIDTH,
    ),
  ];
  for (const [name, specs] of groups()) {
    out.push('', `${name}:`);
    for (const spec of specs) {
      const names = [spec.flag, ...(spec.aliases ?? [])].join(', ');
      const left = `  ${names}${metavar(spec) ? ` ${metavar(spec)}` : ''}`;
      const value = flagDefault(spec, defaults);
      // A no-break space keeps "[default: X]" on one line; short values never need breaking.
      const suffix = value === undefined ? '' : ` [default:\u00a0${value}]`;
      const body = wrap(description(spec, (s) => s) + suffix, WIDTH - LEFT).map((l) =>
        l.replaceAll('\u00a0', ' '),
      );
      if (left.length < LEFT - 1) {
        out.push(left.padEnd(LEFT) + body[0]);
      } else {
        out.push(left, ' '.repeat(LEFT) + body[0]);
      }
      for (const more of body.slice(1)) out.push(' '.repeat(LEFT) + more);
    }
  }
  return out.join('\n');
}

const cell = (s: string) => s.replaceAll('|', '\\|');
const code = (s: string) => `\`${s}\``;

/** Markdown tables (one per help group) for the README, between the flags:start/end markers. */
export function renderFlagReference(): string {
  const defaults = defaultRouterConfig();
  const out: string[] = [
    'Settings are read from, highest first: flags, environment variables, the `ROUTER_CONFIG` variable ' +
      '(JSON), `--config FILE` (JSON shaped like the `--check-config` output), defaults. Every flag that ' +
      'sets a value can also be given as `VLLM_ROUTER_<FLAG>` (`--worker-urls` → `VLLM_ROUTER_WORKER_URLS`); ' +
      'list values are space- or comma-separated.',
  ];
  for (const [name, specs] of groups()) {
    out.push(
      '',
      `### ${name}`,
      '',
      '| Flag | Aliases | Default | Description |',
      '| --- | --- | --- | --- |',
    );
    for (const spec of specs) {
      const flag = code(`${spec.flag}${metavar(spec) ? ` ${metavar(spec)}` : ''}`);
      const aliases = (spec.aliases ?? []).map(code).join(', ');
      const value = flagDefault(spec, defaults);
      const row = [flag, aliases, value === undefined ? '' : code(value), description(spec, code)];
      out.push(`| ${row.map(cell).join(' | ')} |`);
    }
  }
  return out.join('\n');
}
