/**
 * Secrets in the configuration (--api-key, --admin-api-key, and any later setting named like a
 * key, token, secret or password) are masked wherever the configuration is printed or logged:
 * `maskSecrets(config)` is the copy to print. A secret that is set reads "***"; an unset one stays
 * unset, so the output still tells whether it is configured.
 */
import type { FlagSpec } from './flags.ts';
import type { RouterConfig } from './schema.ts';

export const SECRET_MASK = '***';

/** Setting names holding secrets (`workers.apiKey`, `admin.apiKey`, ...; not `sessionKey`). */
const SECRET_NAME = /(?:apiKey|token|secret|password)$/i;

export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name);
}

function masked(value: unknown, name: string): unknown {
  if (value === undefined || value === null) return value;
  if (isSecretName(name) && (typeof value === 'string' || typeof value === 'number')) return SECRET_MASK;
  // A URL's password (`--state-store` given in the environment) is masked wherever the setting is.
  if (typeof value === 'string' && value.includes('@')) return redactUrlCredentials(value);
  if (Array.isArray(value)) return value.map((v) => masked(v, name));
  if (typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = masked(v, k);
  return out;
}

/** `scheme://user:password@host` → `scheme://***@host`, wherever it appears in `text`. */
export function redactUrlCredentials(text: string): string {
  return text.replace(/(\/\/)[^/?#@\s]*@/g, `$1${SECRET_MASK}@`);
}

/** The URL carries a password (`scheme://user:password@host`). */
export function urlHasPassword(value: string): boolean {
  try {
    return new URL(value).password !== '';
  } catch {
    return false;
  }
}

/** How a value given for the setting `name` may be quoted in a message. */
export function quotableValue(name: string, text: string): string {
  return isSecretName(name) ? SECRET_MASK : redactUrlCredentials(text);
}

/** A copy of `config` with every secret replaced by "***" (the config itself is left as it is). */
export function maskSecrets(config: RouterConfig): RouterConfig {
  return masked(config, '') as RouterConfig;
}

/** Why a flag's value may not be given on the command line (a secret there is visible to every user). */
export function commandLineRefusal(spec: FlagSpec, name: string, value: unknown): string | undefined {
  if (spec.envOnly !== undefined) return `${name} cannot be given on the command line: ${spec.envOnly}`;
  if (spec.noInlinePassword !== undefined && typeof value === 'string' && urlHasPassword(value)) {
    return `${name}: the URL carries a password, visible to every user of the machine: ${spec.noInlinePassword}`;
  }
  return undefined;
}
