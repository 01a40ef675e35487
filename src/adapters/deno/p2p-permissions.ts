/**
 * P2P-NCCL registration on Deno: the zeromq native addon needs permissions a router without it
 * does not. They are checked before the addon loads (its loader would print a stack), and a
 * refusal while loading or binding becomes the startup error (exit 2) that names the flag and
 * the permissions.
 */
import { ConfigError } from '../../core/config/errors.ts';
import type { P2pRegistry } from '../p2p/registry.ts';

const DISCOVERY_FLAG = '--vllm-discovery-address';

/** What the zeromq addon needs under Deno (its loader reads /etc/alpine-release to pick a C library build). */
const P2P_PERMISSIONS = '--allow-ffi=node_modules/zeromq --allow-read=.,/etc/alpine-release';

function p2pPermissionError(address: string, missing: string, cause?: unknown): ConfigError {
  return new ConfigError(
    `${DISCOVERY_FLAG} ${address}: the zeromq native addon needs Deno permissions (missing: ${missing}); ` +
      `run with ${P2P_PERMISSIONS}`,
    { flag: DISCOVERY_FLAG, ...(cause === undefined ? {} : { cause }) },
  );
}

/** The permissions the zeromq addon lacks, checked before loading it (its loader would print a stack). */
function missingP2pPermissions(): string[] {
  let addon: URL;
  try {
    addon = new URL('..', import.meta.resolve('zeromq'));
  } catch {
    return []; // not installed: loading it reports that
  }
  const granted = (d: Deno.PermissionDescriptor) => Deno.permissions.querySync(d).state === 'granted';
  const missing: string[] = [];
  if (!granted({ name: 'ffi', path: addon })) missing.push('ffi access to node_modules/zeromq');
  if (!granted({ name: 'read', path: addon })) missing.push('read access to node_modules/zeromq');
  if (Deno.build.os === 'linux' && !granted({ name: 'read', path: '/etc/alpine-release' })) {
    missing.push('read access to /etc/alpine-release');
  }
  return missing;
}

/** A Deno permission refusal, thrown or reported in a message (the addon loader wraps its errors). */
function isPermissionRefusal(err: unknown): boolean {
  for (let e = err; e instanceof Error; e = e.cause) {
    if (e instanceof Deno.errors.NotCapable || e instanceof Deno.errors.PermissionDenied) return true;
    if (/\b(NotCapable|PermissionDenied)\b/.test(e.message)) return true;
  }
  return false;
}

/** Binds the registration socket, or throws the startup error naming the flag (and the permissions). */
export async function bindP2p(p2p: P2pRegistry, address: string): Promise<string> {
  const missing = missingP2pPermissions();
  if (missing.length > 0) throw p2pPermissionError(address, missing.join(', '));
  try {
    return await p2p.bind(address);
  } catch (err) {
    if (isPermissionRefusal(err)) throw p2pPermissionError(address, 'refused while loading or binding', err);
    throw err;
  }
}
