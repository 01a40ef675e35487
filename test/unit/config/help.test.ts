import { describe, expect, it } from 'vitest';
import { envName, FLAG_BY_NAME, FLAG_GROUPS, FLAGS } from '../../../src/core/config/flags.ts';
import { flagDefault, renderFlagReference, renderHelp } from '../../../src/core/config/help.ts';
import { knownKeys } from '../../../src/core/config/schema.ts';

/** The help text with wrapped descriptions joined back onto their flag's line. */
function helpEntries(): string[] {
  return renderHelp()
    .replace(/\n {38}/g, ' ')
    .split('\n');
}

function entryFor(flag: string): string {
  const line = helpEntries().find(
    (l) => l.startsWith(`  ${flag} `) || l === `  ${flag}` || l.startsWith(`  ${flag},`),
  );
  if (line === undefined) throw new Error(`${flag} is not in --help`);
  return line;
}

/** Every flag DESIGN.md section 4 names, then SMG's, production-stack's and our own additions. */
const REQUIRED_FLAGS = `
  --host --port --worker-urls --policy --prefill-policy --decode-policy --cache-threshold
  --balance-abs-threshold --balance-rel-threshold --eviction-interval --max-tree-size --vllm-pd-disaggregation
  --prefill --decode --kv-connector --vllm-discovery-address --intra-node-data-parallel-size --retry-max-retries
  --retry-initial-backoff-ms --retry-max-backoff-ms --retry-backoff-multiplier --retry-jitter-factor
  --disable-retries --cb-failure-threshold --cb-success-threshold --cb-timeout-duration-secs
  --cb-window-duration-secs --disable-circuit-breaker --health-failure-threshold --health-success-threshold
  --health-check-timeout-secs --health-check-interval-secs --health-check-endpoint --worker-startup-timeout-secs
  --worker-startup-check-interval --max-concurrent-requests --queue-size --queue-timeout-secs --api-key
  --api-key-validation-urls --request-id-headers --request-timeout-secs --max-payload-size --cors-allowed-origins
  --service-discovery --selector --service-discovery-port --service-discovery-namespace --prefill-selector
  --decode-selector --prometheus-host --prometheus-port --log-level --log-json
  --pd-disaggregation --cache-match-threshold --spill-abs-threshold --spill-rel-threshold
  --max-buffered-request-bytes --health-check-port
  --static-backends --static-models --routing-logic --session-key --enable-retries --max-retries
  --initial-backoff-ms --max-backoff-ms --backoff-multiplier --jitter-factor --max-instance-failover-reroute-attempts
  --retryable-status-codes --retry-budget-ratio --retry-budget-min-per-sec --cb-capacity-status-codes
  --disable-health-check --config --check-config --help -h --version --shutdown-grace-period-secs
`
  .trim()
  .split(/\s+/);

describe('the flag table', () => {
  it('holds every required flag', () => {
    const missing = REQUIRED_FLAGS.filter((flag) => !FLAG_BY_NAME.has(flag));
    expect(missing).toEqual([]);
  });

  it('spells each name once', () => {
    const names = FLAGS.flatMap((spec) => [spec.flag, ...(spec.aliases ?? [])]);
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(name).toMatch(/^(--[a-z0-9]+(-[a-z0-9]+)*|-[a-zA-Z])$/);
  });

  it('points every path at a field the schema has', () => {
    for (const spec of FLAGS) {
      if (spec.path === undefined) continue;
      const keys = spec.path.split('.');
      expect(knownKeys(keys.slice(0, -1)), `${spec.flag} → ${spec.path}`).toContain(keys.at(-1));
    }
  });

  it('gives each flag that sets a value its VLLM_ROUTER_ variable, and no variable twice', () => {
    const all: string[] = [];
    for (const spec of FLAGS) {
      const setsValue =
        (spec.path !== undefined || spec.custom !== undefined) && !spec.ignored && !spec.refused;
      if (setsValue) expect(spec.env?.at(-1), spec.flag).toBe(envName(spec.flag));
      all.push(...(spec.env ?? []));
    }
    expect(new Set(all).size).toBe(all.length);
    expect(envName('--worker-urls')).toBe('VLLM_ROUTER_WORKER_URLS');
    expect(FLAG_BY_NAME.get('--api-key-validation-urls')?.env).toContain('API_KEY_VALIDATION_URLS');
  });

  it('keeps refused and ignored flags away from the config', () => {
    for (const spec of FLAGS.filter((s) => s.refused || s.ignored))
      expect(spec.path, spec.flag).toBeUndefined();
  });
});

describe('--help', () => {
  const help = renderHelp();

  it("groups flags the way vllm-router's CLI reference does", () => {
    expect(FLAG_GROUPS).toEqual([
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
    ]);
  });

  it('lists every group, in order', () => {
    const positions = FLAG_GROUPS.map((group) => help.indexOf(`\n${group}:\n`));
    expect(positions.every((p) => p > 0)).toBe(true);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
  });

  it('lists every flag and alias under its group', () => {
    for (const group of FLAG_GROUPS) {
      const start = help.indexOf(`\n${group}:\n`);
      const end = help.indexOf('\n\n', start + 1);
      const block = help.slice(start, end < 0 ? undefined : end);
      for (const spec of FLAGS.filter((s) => s.group === group)) {
        expect(block, `${spec.flag} under ${group}`).toContain(`\n  ${spec.flag}`);
        for (const alias of spec.aliases ?? []) expect(entryFor(spec.flag)).toContain(alias);
      }
    }
  });

  it('shows the defaults the schema holds', () => {
    expect(entryFor('--port')).toContain('[default: 30000]');
    expect(entryFor('--policy')).toContain('[default: cache_aware]');
    expect(entryFor('--retry-jitter-factor')).toContain('[default: 0.2]');
    expect(entryFor('--retryable-status-codes')).toContain('[default: 408 429 500 502 503 504]');
    expect(entryFor('--request-id-headers')).toContain(
      '[default: x-request-id x-correlation-id x-trace-id request-id]',
    );
    expect(entryFor('--enable-retries')).toContain('[default: true]');
    expect(entryFor('--disable-retries')).toContain('[default: false]');
    expect(entryFor('--api-key')).not.toContain('[default:');
    for (const spec of FLAGS) {
      const value = flagDefault(spec);
      if (value !== undefined) expect(entryFor(spec.flag), spec.flag).toContain(`[default: ${value}]`);
    }
  });

  it('shows the environment variables that are not VLLM_ROUTER_<FLAG>', () => {
    expect(entryFor('--api-key-validation-urls')).toContain('API_KEY_VALIDATION_URLS');
    expect(entryFor('--sll-session-expiration-secs')).toContain('VLLM_ROUTER_SLL_SESSION_EXPIRATION_IN_S');
  });

  it('shows the refusal hint', () => {
    expect(entryFor('--max-instance-failover-reroute-attempts')).toContain(
      'use --enable-retries --max-retries N+1',
    );
  });

  it('fits in 100 columns', () => {
    for (const line of help.split('\n')) expect(line.length, line).toBeLessThanOrEqual(100);
  });
});

describe('the README flag reference', () => {
  const reference = renderFlagReference();

  it('has a table per group and a row per flag', () => {
    for (const group of FLAG_GROUPS) {
      expect(reference).toContain(
        `### ${group}\n\n| Flag | Aliases | Default | Description |\n| --- | --- | --- | --- |\n`,
      );
    }
    for (const spec of FLAGS)
      expect(reference, spec.flag).toMatch(new RegExp(`^\\| \`${spec.flag}[ \`]`, 'm'));
  });

  it('shows aliases and defaults in their columns, and escapes pipes', () => {
    expect(reference).toContain(
      '| `--retry-max-retries N` | `--max-retries` | `5` | Attempts per request, the first included (1: no retry) |',
    );
    expect(reference).toContain('| `--prefill URL [PORT\\|none]` |');
    for (const line of reference.split('\n').filter((l) => l.startsWith('| `'))) {
      expect(line.replaceAll('\\|', '').split('|')).toHaveLength(6);
    }
  });
});
