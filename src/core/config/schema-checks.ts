/**
 * Checks across fields of the configuration (the schema's refinement). Each issue names both
 * fields, so the error can blame whichever one the user set (a flag, a variable, a file field).
 */
import type { z } from 'zod';

/** The fields these checks read (the schema's output, structurally: no import cycle). */
interface Checked {
  retry: { initialBackoffMs: number; maxBackoffMs: number };
  workers: { urls: string[]; models: string[]; modelLabels: string[] };
  pd: {
    enabled: boolean;
    prefill: { url: string }[];
    decode: string[];
    kvConnector?: string | undefined;
    discoveryAddress?: string | undefined;
    concurrentDispatch: boolean;
    prefillLabels: string[];
    decodeLabels: string[];
  };
  discovery: { mode?: string | undefined };
}

type Conflict = (path: string, message: string, related: string, relatedMessage?: string) => void;

/**
 * production-stack's static PD fleet: --static-backends with --static-model-labels, whose labels
 * --prefill-model-labels / --decode-model-labels turn into roles. True when that is what is given.
 */
function checkLabels(c: Checked, conflict: Conflict): boolean {
  const { urls, modelLabels } = c.workers;
  const { prefillLabels, decodeLabels } = c.pd;
  if (modelLabels.length === 0 || (prefillLabels.length === 0 && decodeLabels.length === 0)) return false;
  if (modelLabels.length !== urls.length) {
    conflict(
      'workers.modelLabels',
      `${modelLabels.length} labels for ${urls.length} worker URLs: give one per URL`,
      'workers.urls',
    );
    return true;
  }
  const roles = modelLabels.map((l) =>
    prefillLabels.includes(l) ? 'prefill' : decodeLabels.includes(l) ? 'decode' : undefined,
  );
  const unknown = modelLabels.filter((_, i) => roles[i] === undefined);
  if (unknown.length > 0) {
    const message = `labels ${unknown.join(', ')} are neither prefill nor decode labels`;
    conflict('workers.modelLabels', message, 'pd.prefillLabels');
  } else if (!roles.includes('prefill') || !roles.includes('decode')) {
    conflict(
      'workers.modelLabels',
      'must give at least one prefill and one decode worker',
      'pd.prefillLabels',
    );
  }
  return true;
}

function checkPd(c: Checked, conflict: Conflict): void {
  const { pd } = c;
  // --prefill / --decode workers turn it on (see impliedSettings).
  const staticPools = pd.prefill.length > 0 || pd.decode.length > 0;
  if (!pd.enabled && !staticPools) {
    if (pd.discoveryAddress !== undefined)
      conflict('pd.discoveryAddress', 'needs --vllm-pd-disaggregation', 'pd.enabled', 'is off');
    return;
  }
  // Empty pools are allowed: workers may join later (admin API, discovery).
  const labelled = checkLabels(c, conflict);
  if (c.workers.urls.length > 0 && !labelled) {
    const message = 'cannot be combined with --vllm-pd-disaggregation: give --prefill and --decode workers';
    conflict('workers.urls', message, 'pd.enabled', 'cannot be combined with --worker-urls');
  }
  const connector = pd.kvConnector;
  if (pd.discoveryAddress !== undefined && connector !== undefined && connector !== 'p2p_nccl') {
    const message = `workers registering over ZMQ use the P2P-NCCL connector, not ${connector}`;
    conflict('pd.discoveryAddress', message, 'pd.kvConnector');
  }
  if (pd.concurrentDispatch && connector !== 'mooncake') {
    const message = 'needs --kv-connector mooncake (a NIXL or P2P-NCCL decode needs the prefill first)';
    conflict('pd.concurrentDispatch', message, 'pd.kvConnector');
  }
}

export function crossChecks(c: Checked, ctx: z.core.$RefinementCtx): void {
  const conflict: Conflict = (path, message, related, relatedMessage = message) =>
    ctx.addIssue({ code: 'custom', path: path.split('.'), message, params: { related, relatedMessage } });
  const { initialBackoffMs: initial, maxBackoffMs: max } = c.retry;
  if (initial > max) {
    const message = `must not exceed the max backoff (${max} ms)`;
    conflict(
      'retry.initialBackoffMs',
      message,
      'retry.maxBackoffMs',
      `must be at least the initial backoff (${initial} ms)`,
    );
  }
  const { urls, models } = c.workers;
  if (urls.length > 0 && models.length > 1 && models.length !== urls.length) {
    const message = `${models.length} models for ${urls.length} worker URLs: give one model per URL or a single model for all`;
    conflict('workers.models', message, 'workers.urls');
  }
  checkPd(c, conflict);
}

/** Settings other settings imply: prefill or decode workers mean prefill/decode disaggregation. */
export function impliedSettings<
  C extends { pd: { enabled: boolean; prefill: unknown[]; decode: unknown[] } },
>(c: C): C {
  if (c.pd.enabled || (c.pd.prefill.length === 0 && c.pd.decode.length === 0)) return c;
  return { ...c, pd: { ...c.pd, enabled: true } };
}
