/**
 * What the Worker's isolates and its fleet Durable Object both read: the bindings (wrangler.toml,
 * secrets) and the router configuration built from them.
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

/** The bindings the Worker and its object share (wrangler.toml, secrets). */
export interface FleetBindings {
  /** The router configuration as JSON (the same schema as --config files). */
  ROUTER_CONFIG?: string;
  /** Secret: the bearer sent to engines (`workers.apiKey`, --api-key). */
  ROUTER_API_KEY?: string;
  /** The fleet object's namespace (typed as `DurableObjectNamespace<FleetObject>` in fleet-object.ts). */
  FLEET: FleetNamespace;
}

/** The configuration from the bindings, read alike in isolates and the object; throws a ConfigError naming the field. */
export function readRouterConfig(env: Pick<FleetBindings, 'ROUTER_CONFIG' | 'ROUTER_API_KEY'>): RouterConfig {
  let raw: Record<string, unknown> = {};
  if (env.ROUTER_CONFIG !== undefined && env.ROUTER_CONFIG.trim() !== '') {
    try {
      raw = JSON.parse(env.ROUTER_CONFIG) as Record<string, unknown>;
    } catch (err) {
      const detail = err instanceof Error ? err.message : String(err);
      throw new ConfigError(`ROUTER_CONFIG: not valid JSON: ${detail}`, { flag: 'ROUTER_CONFIG' });
    }
  }
  if (env.ROUTER_API_KEY) {
    const workers = typeof raw.workers === 'object' && raw.workers !== null ? raw.workers : {};
    raw = { ...raw, workers: { ...workers, apiKey: env.ROUTER_API_KEY } };
  }
  const config = parseRouterConfig(raw);
  assertSupported(config);
  return config;
}
