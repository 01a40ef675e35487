import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/core/config/errors.ts';
import { resolveConfig } from '../../../src/core/config/load.ts';
import type { RouterConfig } from '../../../src/core/config/schema.ts';

const run = (argv: readonly string[], env: Record<string, string> = {}): RouterConfig =>
  resolveConfig({
    argv,
    env,
    readTextFile: () => {
      throw new Error('no files here');
    },
  }).config;

describe('memory bounds on the command line', () => {
  it('defaults: a 64 MiB prefix-tree estimate per pool, 256 MiB of buffered bodies router-wide', () => {
    const c = run([]);
    expect(c.policy.maxTreeBytes).toBe(64 * 2 ** 20);
    expect(c.policy.maxTreeSize).toBe(67_108_864);
    expect(c.server.maxBufferedBytesTotal).toBe(256 * 2 ** 20);
  });

  it('reads --max-tree-bytes and --max-buffered-bytes-total (0 = no budget), and keeps --max-tree-size', () => {
    const c = run([
      '--max-tree-bytes',
      '1048576',
      '--max-buffered-bytes-total',
      '0',
      '--max-tree-size',
      '5000',
    ]);
    expect(c.policy.maxTreeBytes).toBe(1_048_576);
    expect(c.server.maxBufferedBytesTotal).toBe(0);
    expect(c.policy.maxTreeSize).toBe(5000);
    expect(run([], { VLLM_ROUTER_MAX_BUFFERED_BYTES_TOTAL: '4096' }).server.maxBufferedBytesTotal).toBe(4096);
  });

  it('rejects a zero or negative tree bound, naming the flag', () => {
    for (const argv of [
      ['--max-tree-bytes', '0'],
      ['--max-buffered-bytes-total', '-1'],
    ]) {
      expect(() => run(argv)).toThrow(ConfigError);
      expect(() => run(argv)).toThrow(argv[0] as string);
    }
  });
});
