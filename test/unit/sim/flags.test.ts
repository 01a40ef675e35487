import { describe, expect, it } from 'vitest';
import { flagsToOptions, resolveOptions } from '../../../src/sim/config.ts';
import { parseSimCommandLine, simHelp } from '../../../src/sim/flags.ts';

describe('sim engine command line', () => {
  it('parses the documented flags, in both --flag value and --flag=value forms', () => {
    const cli = parseSimCommandLine([
      '--port',
      '8001',
      '--ttft-ms',
      '50',
      '--itl-ms=10',
      '--tokens',
      '16',
      '--model',
      'm',
      '--block-ms',
      '5',
      '--cache-blocks',
      '4096',
      '--max-running',
      '64',
      '--fail-mode',
      'status',
      '--fail-status',
      '503',
      '--fail-rate',
      '0.3',
      '--retry-after',
      '1',
      '--fail-body',
      'x',
      '--cut-after-chunks',
      '4',
      '--unhealthy',
      '--seed',
      '42',
      '--id',
      'a',
    ]);
    expect(cli).toMatchObject({ port: 8001, host: '127.0.0.1', help: false });
    expect(cli.options).toMatchObject({
      id: 'a',
      ttftMs: 50,
      itlMs: 10,
      tokens: 16,
      models: ['m'],
      blockMs: 5,
      cacheBlocks: 4096,
      maxRunning: 64,
      unhealthy: true,
      seed: 42,
      failure: { mode: 'status', status: 503, rate: 0.3, retryAfter: '1', body: 'x', cutAfterChunks: 4 },
    });
  });

  it('takes --fail-first, repeated --model, booleans with values, a lone -- and --help', () => {
    const cli = parseSimCommandLine([
      '--',
      '--model',
      'a,b',
      '--model=c',
      '--unhealthy',
      '0',
      '--fail-first',
      '20',
      '--help',
    ]);
    expect(cli.help).toBe(true);
    expect(cli.options).toMatchObject({
      models: ['a', 'b', 'c'],
      unhealthy: false,
      failure: { mode: 'none', first: 20 },
    });
    expect(cli.options.id).toBe('sim-8000');
    expect(parseSimCommandLine(['--port', '0']).options.id).toBeUndefined();
  });

  it('reads SIM_* environment variables below the flags', () => {
    const cli = parseSimCommandLine(['--tokens', '3'], {
      SIM_PORT: '9001',
      SIM_TOKENS: '7',
      SIM_TTFT_MS: '12',
    });
    expect(cli.port).toBe(9001);
    expect(cli.options).toMatchObject({ tokens: 3, ttftMs: 12, id: 'sim-9001' });
  });

  it('fails on unknown flags and bad values, naming the flag', () => {
    expect(() => parseSimCommandLine(['--bogus', '1'])).toThrow(/--bogus/);
    expect(() => parseSimCommandLine(['--fail-mode', 'explode'])).toThrow(/--fail-mode/);
    expect(() => parseSimCommandLine(['--fail-rate', '1.5'])).toThrow(/--fail-rate/);
    expect(() => parseSimCommandLine(['--fail-status', '42'])).toThrow(/--fail-status/);
    expect(() => parseSimCommandLine(['--tokens', '2.5'])).toThrow(/--tokens/);
    expect(() => parseSimCommandLine(['--ttft-ms'])).toThrow(/--ttft-ms needs a value/);
    expect(() => parseSimCommandLine(['--port', '70000'])).toThrow(/--port/);
    expect(() => parseSimCommandLine(['stray'])).toThrow(/unexpected argument/);
  });

  it('lists every flag in --help', () => {
    const help = simHelp();
    for (const flag of [
      '--port',
      '--ttft-ms',
      '--fail-mode',
      '--cut-after-chunks',
      '--unhealthy',
      '--seed',
    ]) {
      expect(help).toContain(flag);
    }
  });

  it('validates programmatic options, naming the option', () => {
    expect(() => resolveOptions({ tokens: -1 })).toThrow(/tokens/);
    expect(() => resolveOptions({ models: [] })).toThrow(/models/);
    expect(() => resolveOptions({ failure: { mode: 'status', first: 1.5 } })).toThrow(/failure.first/);
    expect(resolveOptions({}).id).toMatch(/^sim-[0-9a-f]{8}$/);
    const base = resolveOptions({ failure: { mode: 'status', first: 3, body: 'b' } });
    expect(flagsToOptions({ 'fail-body': '' }, base).failure).toEqual({ mode: 'status', first: 3 });
  });
});
