import { describe, expect, it } from 'vitest';
import { createLogger, type LogFields, type LogLevel } from '../../src/core/observability/logger.ts';

/** The text line as the format defines it (the plain form, for comparison). */
function reference(time: number, level: LogLevel, msg: string, fields: LogFields): string {
  const value = (v: unknown): string => {
    if (typeof v === 'string') return /[\s"=]/.test(v) ? JSON.stringify(v) : v;
    if (v instanceof Error) return JSON.stringify(v.message);
    return typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v);
  };
  let line = `${new Date(time).toISOString()} ${level.toUpperCase().padEnd(5)} ${msg}`;
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) line += ` ${k}=${value(v)}`;
  return line;
}

function capture(json = false) {
  const lines: string[] = [];
  let now = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
  const logger = createLogger({ level: 'trace', json, sink: (l) => lines.push(l), now: () => now });
  return { logger, lines, at: (ms: number) => (now = ms) };
}

const VALUES: unknown[] = [
  'plain',
  '',
  'two words',
  'tab\there',
  'line\nbreak',
  'vt\u000bff\u000c',
  'cr\r',
  'quote"d',
  'a=b',
  'nbsp\u00a0x',
  'em\u2003space',
  'ideographic\u3000',
  'bom\ufeff',
  'line-sep\u2028',
  'ctrl\u0001\u001f',
  'caf\u00e9',
  '\u00ff\u0100',
  42,
  12.5,
  -0,
  Number.NaN,
  true,
  null,
  { a: 1, b: 'x y' },
  ['a', 2],
  new Error('bad "thing"'),
];

describe('logger text lines', () => {
  it('writes every value exactly as the format defines', () => {
    const { logger, lines } = capture();
    const t = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
    VALUES.forEach((v, i) => {
      logger.info('request', { i, v, skipped: undefined, after: 'x' });
      expect(lines[i]).toBe(reference(t, 'info', 'request', { i, v, skipped: undefined, after: 'x' }));
    });
  });

  it('pads every level label', () => {
    const { logger, lines } = capture();
    const t = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
    for (const level of ['trace', 'debug', 'info', 'warn', 'error'] as const)
      logger.log(level, 'm', { k: 1 });
    expect(lines).toEqual(
      (['trace', 'debug', 'info', 'warn', 'error'] as const).map((l) => reference(t, l, 'm', { k: 1 })),
    );
  });

  it('takes the time of every line from the clock, also within and across milliseconds', () => {
    const { logger, lines, at } = capture();
    const times = [1_000, 1_000, 1_001, 1_000, 999, 86_400_000 + 999, 86_400_000 + 999];
    // Within one second, across seconds, and back: 5, 50 and 999 ms past a second.
    times.push(1_796_162_000_005, 1_796_162_000_050, 1_796_162_001_000, 1_796_161_999_999, 1_796_162_000_005);
    for (const t of times) {
      at(t);
      logger.warn('x');
    }
    expect(lines).toEqual(times.map((t) => reference(t, 'warn', 'x', {})));
  });

  it('keeps the JSON form', () => {
    const { logger, lines, at } = capture(true);
    at(5);
    logger.error('boom', { a: 'b c' });
    at(6);
    logger.error('boom');
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      { time: new Date(5).toISOString(), level: 'error', msg: 'boom', a: 'b c' },
      { time: new Date(6).toISOString(), level: 'error', msg: 'boom' },
    ]);
  });
});
