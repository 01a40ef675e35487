/** Values as flags and variables spell them, and dot paths into a partial config. */
import { NUMERIC } from './argv-tokens.ts';

/** A partial config: the nested shape of RouterConfig with only the values that were given. */
export type ConfigOverrides = { [key: string]: unknown };

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
