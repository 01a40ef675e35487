/**
 * Leveled logger writing one line per event (JSON with --log-json, else `time level msg k=v`).
 * The sink and the clock are injected: adapters batch lines into one write per tick, and the
 * timestamp comes from the router's Clock (src/core never reads the system time itself).
 * Never log a token or a prompt.
 */

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error';

const LEVELS: Record<LogLevel, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50 };

export type LogFields = Record<string, unknown>;

export interface Logger {
  enabled(level: LogLevel): boolean;
  log(level: LogLevel, msg: string, fields?: LogFields): void;
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
}

export type LogSink = (line: string, level: LogLevel) => void;

/** Whether a string is written quoted: it has whitespace (as `\s` matches it), `"` or `=`. */
function needsQuotes(v: string): boolean {
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c === 0x20 || c === 0x22 || c === 0x3d || (c >= 0x09 && c <= 0x0d)) return true;
    if (c >= 0xa0 && /\s/.test(v[i] as string)) return true;
  }
  return false;
}

function formatValue(v: unknown): string {
  if (typeof v === 'string') return needsQuotes(v) ? JSON.stringify(v) : v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (v instanceof Error) return JSON.stringify(v.message);
  return typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v);
}

/** `LEVEL` padded to five characters, as the text format writes it. */
const LABELS: Record<LogLevel, string> = {
  trace: 'TRACE',
  debug: 'DEBUG',
  info: 'INFO ',
  warn: 'WARN ',
  error: 'ERROR',
};

export function createLogger(options: {
  level: LogLevel;
  json: boolean;
  sink: LogSink;
  /** Milliseconds since the epoch, from the injected Clock. */
  now: () => number;
}): Logger {
  const threshold = LEVELS[options.level];
  const { sink, json, now } = options;
  const enabled = (level: LogLevel) => LEVELS[level] >= threshold;
  // Lines in the same millisecond share one timestamp text, and lines in the same second the
  // text up to its milliseconds (an ISO date costs more than the rest of a line).
  let stampMs = Number.NaN;
  let stamp = '';
  let second = Number.NaN;
  let secondText = '';
  const timeText = (at: number): string => {
    const ms = Math.floor(at);
    if (ms === stampMs) return stamp;
    const frac = ms % 1000;
    if (ms - frac !== second || frac < 0) {
      second = ms - frac;
      secondText = new Date(second).toISOString().slice(0, 20); // 2026-01-01T00:00:00.
    }
    stamp =
      frac < 0
        ? new Date(ms).toISOString()
        : `${secondText}${frac < 10 ? '00' : frac < 100 ? '0' : ''}${frac}Z`;
    stampMs = ms;
    return stamp;
  };
  const log = (level: LogLevel, msg: string, fields?: LogFields) => {
    if (LEVELS[level] < threshold) return;
    const time = timeText(now());
    if (json) {
      sink(JSON.stringify({ time, level, msg, ...fields }), level);
      return;
    }
    let line = `${time} ${LABELS[level]} ${msg}`;
    // for-in, not Object.keys: a plain literal's own keys, without an array per line.
    if (fields)
      for (const k in fields) {
        const v = fields[k];
        if (v !== undefined) line += ` ${k}=${formatValue(v)}`;
      }
    // The concatenations above leave a tree of small strings. Reading one character makes V8 copy it
    // into one flat string now, while its pieces are in the cache, rather than when the batch is
    // joined up to 20 ms later (line-batch.ts), after a young collection has copied every piece
    // (docs/benchmarks.md, round 26: 4-5 % of a request's CPU).
    line.charCodeAt(0);
    sink(line, level);
  };
  return {
    enabled,
    log,
    debug: (m, f) => log('debug', m, f),
    info: (m, f) => log('info', m, f),
    warn: (m, f) => log('warn', m, f),
    error: (m, f) => log('error', m, f),
  };
}

/** A logger that drops everything (tests, benchmarks of the core alone); no line is kept, so its clock is a constant. */
export const silentLogger: Logger = createLogger({
  level: 'error',
  json: false,
  sink: () => {},
  now: () => 0,
});
