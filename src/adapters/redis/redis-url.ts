/**
 * `--state-store` URLs: `redis://host:port/db` and `rediss://host:port/db` (TLS). A password may
 * come separately (VLLM_ROUTER_STATE_STORE_PASSWORD) or, tolerated, inside the URL; `displayUrl` never
 * shows it.
 */

export interface RedisTarget {
  host: string;
  port: number;
  tls: boolean;
  database: number;
  username?: string;
  password?: string;
  /** The URL with any password replaced by `***` (for logs and /health). */
  displayUrl: string;
}

const DEFAULT_PORT = 6379;

function invalid(shown: string, why: string): Error {
  return new Error(
    `--state-store: ${why} in '${shown}' (expected redis://host:port/db or rediss://host:port/db)`,
  );
}

/** Masks `user:password@` (or `:password@`) in anything that looks like a URL. */
function maskCredentials(raw: string): string {
  return raw.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^@/]*@/i, '$1***@');
}

/**
 * Parses a `--state-store` URL. `password`, when given, overrides one in the URL.
 * Throws an Error naming `--state-store` when the URL is not a usable Redis URL.
 */
export function parseRedisUrl(raw: string, password?: string): RedisTarget {
  const shown = maskCredentials(raw.trim());
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw invalid(shown, 'not a URL');
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw invalid(shown, `unsupported scheme '${url.protocol.slice(0, -1)}'`);
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (host === '') throw invalid(shown, 'no host');
  const port = url.port === '' ? DEFAULT_PORT : Number(url.port);
  const path = url.pathname.replace(/^\//, '');
  if (!/^\d*$/.test(path)) throw invalid(shown, `database '${path}' is not a number`);
  if (url.search !== '' || url.hash !== '') throw invalid(shown, 'unexpected query or fragment');
  const database = path === '' ? 0 : Number(path);
  const username = url.username === '' ? undefined : decodeURIComponent(url.username);
  const urlPassword = url.password === '' ? undefined : decodeURIComponent(url.password);
  const secret = password !== undefined && password !== '' ? password : urlPassword;
  const credentials = username !== undefined || urlPassword !== undefined ? '***@' : '';
  const hostPart = host.includes(':') ? `[${host}]` : host;
  return {
    host,
    port,
    tls: url.protocol === 'rediss:',
    database,
    ...(username !== undefined ? { username } : {}),
    ...(secret !== undefined ? { password: secret } : {}),
    displayUrl: `${url.protocol}//${credentials}${hostPart}:${port}/${database}`,
  };
}
