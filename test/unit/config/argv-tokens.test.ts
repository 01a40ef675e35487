/** The argv tokenizer: flags with their inline and following values, stray arguments, a lone `--`. */
import { describe, expect, it } from 'vitest';
import { FlagValues, isFlagToken, splitFlag, tokenizeArgv } from '../../../src/core/config/argv-tokens.ts';

describe('tokenizeArgv', () => {
  it('groups each flag with the values that follow it', () => {
    expect(tokenizeArgv(['--worker-urls', 'http://a', 'http://b', '--port', '1'])).toEqual([
      { kind: 'flag', name: '--worker-urls', inline: undefined, values: ['http://a', 'http://b'] },
      { kind: 'flag', name: '--port', inline: undefined, values: ['1'] },
    ]);
  });

  it('splits --name=value at the first =', () => {
    expect(tokenizeArgv(['--selector=app=vllm', 'x'])).toEqual([
      { kind: 'flag', name: '--selector', inline: 'app=vllm', values: ['x'] },
    ]);
  });

  it('treats negative numbers as values', () => {
    expect(tokenizeArgv(['--port', '-1'])).toEqual([
      { kind: 'flag', name: '--port', inline: undefined, values: ['-1'] },
    ]);
  });

  it('drops a lone --, which still ends the values of the flag before it', () => {
    expect(tokenizeArgv(['--', '--port', '--', '1'])).toEqual([
      { kind: 'flag', name: '--port', inline: undefined, values: [] },
      { kind: 'stray', text: '1' },
    ]);
  });

  it('reports arguments before the first flag as strays', () => {
    expect(tokenizeArgv(['router.json', '-h'])).toEqual([
      { kind: 'stray', text: 'router.json' },
      { kind: 'flag', name: '-h', inline: undefined, values: [] },
    ]);
  });
});

describe('splitFlag and isFlagToken', () => {
  it('take = only in --long flags', () => {
    expect(splitFlag('-p=1')).toEqual({ name: '-p=1', inline: undefined });
    expect(splitFlag('--log-json=')).toEqual({ name: '--log-json', inline: '' });
  });

  it('tell flags from values', () => {
    expect(['--', '-h', '--port'].map(isFlagToken)).toEqual([true, true, true]);
    expect(['-', '-1', '+2', '.5e3', 'x'].map(isFlagToken)).toEqual([false, false, false, false, false]);
  });
});

describe('FlagValues', () => {
  it('hands out values from the front', () => {
    const values = new FlagValues(['a', 'b', 'c']);
    expect(values.peek()).toBe('a');
    expect(values.take()).toBe('a');
    expect(values.takeAll()).toEqual(['b', 'c']);
    expect(values.peek()).toBeUndefined();
    expect(values.take()).toBeUndefined();
  });
});
