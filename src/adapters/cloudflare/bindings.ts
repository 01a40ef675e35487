/**
 * What the Worker's isolates and its fleet Durable Objects all read: the bindings (wrangler.toml,
 * secrets), the router configuration built from them, and the objects' names.
 */
import { ConfigError } from '../../core/config/errors.ts';
import { parseRouterConfig, type RouterConfig } from '../../core/config/schema.ts';
import { assertSupported } from '../../core/config/unsupported.ts';

/** The part of a Durable Object namespace binding the client uses. */
export interface FleetNamespace {
  idFromName(name: string): DurableObjectId;
  get(id: DurableObjectId): unknown;
}

export const DEFAULT_FLEET_OBJECT = 'fleet';

const POOL_MARK = '/pool:';

/** The name of the object that routes `model`'s requests for the fleet object named `fleet`. */
export function poolObjectName(fleet: string, model: string): string {
  return `${fleet}${POOL_MARK}${model}`;
}

/** The fleet object a pool object follows, from the pool object's name. */
export function fleetOfPool(pool: string): string {
  const at = pool.indexOf(POOL_MARK);
  return at < 0 ? DEFAULT_FLEET_OBJECT : pool.slice(0, at);
}

/** The bindings the Worker and its object share (wrangler.toml, secrets). */
export interface FleetBindings {
  /** The router configuration as JSON (the same schema as --config files). */
  ROUTER_CONFIG?: string;
  /** Secret: the bearer sent to engines (`workers.apiKey`, --api-key). */
  ROUTER_API_KEY?: string;
  /** Secret: the bearer the admin API requires (`admin.apiKey`); without it admin routes are off. */
  ADMIN_API_KEY?: string;
  /** Client auth (`auth.apiKeyValidationUrls`): validation URLs, comma or space separated. */
  API_KEY_VALIDATION_URLS?: string;
  /** The fleet object's namespace (typed as `DurableObjectNamespace<FleetObject>` in object-base.ts). */
  FLEET: FleetNamespace;
  /**
   * The model pools' objects (`PoolObject`). Without this binding every request goes to the fleet
   * object, as before sharding.
   */
  FLEET_POOLS?: FleetNamespace;
}

/** The configuration from the bindings, read alike in isolates and the object; throws a ConfigError naming the field. */
export type ConfigBindings = Pick<
  FleetBindings,
  'ROUTER_CONFIG' | 'ROUTER_API_KEY' | 'ADMIN_API_KEY' | 'API_KEY_VALIDATION_URLS'
>;

function section(raw: Record<string, unknown>, name: string): Record<string, unknown> {
  const value = raw[name];
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
}

/** The secrets and plain variables that stand for config fields, merged over ROUTER_CONFIG. */
function withBindings(raw: Record<string, unknown>, env: ConfigBindings): Record<string, unknown> {
  let out = raw;
  if (env.ROUTER_API_KEY)
    out = { ...out, workers: { ...section(out, 'workers'), apiKey: env.ROUTER_API_KEY } };
  if (env.ADMIN_API_KEY) out = { ...out, admin: { ...section(out, 'admin'), apiKey: env.ADMIN_API_KEY } };
  const urls = env.API_KEY_VALIDATION_URLS?.split(/[\s,]+/).filter((u) => u !== '') ?? [];
  if (urls.length > 0) out = { ...out, auth: { ...section(out, 'auth'), apiKeyValidationUrls: urls } };
  return out;
}

export function readRouterConfig(env: ConfigBindings): RouterConfig {
  let raw: Record<string, unknown> = {};
  if (env.ROUTER_CONFIG !== undefined && env.ROUTER_CONFIG.trim() !== '') {
    try {
      raw = JSON.parse(env.ROUTER_CONFIG) as Record<string, unknown>;
    } catch (err) {
      const detail = err instanceof Error ? err.message : String(err);
      throw new ConfigError(`ROUTER_CONFIG: not valid JSON: ${detail}`, { flag: 'ROUTER_CONFIG' });
    }
  }
  // A pasted --check-config output carries the detected command-line dialect: not a setting.
  const { dialect: _dialect, ...settings } = raw;
  const config = parseRouterConfig(withBindings(settings, env));
  assertSupported(config);
  return config;
}
