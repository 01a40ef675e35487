/** The admin API's wire shapes (snake_case, as the anchors' APIs) and their validation. */
import { z } from 'zod';
import { breakerFields, retryFields } from '../config/schema.ts';
import { port } from '../config/schema-parts.ts';
import type { WorkerInfo, WorkerPatch, WorkerSource, WorkerSpec } from '../contracts/fleet-api.ts';
import { workerUrlField } from './worker-url-rules.ts';

// Ranges come from the config schema: an override obeys the same rules as the flag it overrides.
const breakerBody = z
  .strictObject({
    failure_threshold: breakerFields.failureThreshold.unwrap(),
    success_threshold: breakerFields.successThreshold.unwrap(),
    timeout_duration_secs: breakerFields.timeoutDurationSecs.unwrap(),
    window_duration_secs: breakerFields.windowDurationSecs.unwrap(),
    disabled: breakerFields.disabled.unwrap(),
  })
  .partial();

const retryBody = z
  .strictObject({
    max_retries: retryFields.maxRetries.unwrap(),
    initial_backoff_ms: retryFields.initialBackoffMs.unwrap(),
    max_backoff_ms: retryFields.maxBackoffMs.unwrap(),
    backoff_multiplier: retryFields.backoffMultiplier.unwrap(),
    jitter_factor: retryFields.jitterFactor.unwrap(),
    disabled: retryFields.disabled.unwrap(),
  })
  .partial();

export const workerBody = z.strictObject({
  url: workerUrlField,
  models: z.array(z.string().min(1)).optional(),
  model_id: z.string().min(1).optional(),
  role: z.enum(['regular', 'prefill', 'decode']).optional(),
  bootstrap_port: port().min(1).nullable().optional(),
  priority: z.number().int().optional(),
  circuit_breaker: breakerBody.optional(),
  retry: retryBody.optional(),
});

export const workerPatchBody = z.strictObject({
  models: z.array(z.string().min(1)).nullable().optional(),
  priority: z.number().int().nullable().optional(),
  circuit_breaker: breakerBody.nullable().optional(),
  retry: retryBody.nullable().optional(),
});

type BreakerBody = z.infer<typeof breakerBody>;
type RetryBody = z.infer<typeof retryBody>;

function breakerOverrides(b: BreakerBody): NonNullable<WorkerSpec['circuitBreaker']> {
  return {
    ...(b.failure_threshold === undefined ? {} : { failureThreshold: b.failure_threshold }),
    ...(b.success_threshold === undefined ? {} : { successThreshold: b.success_threshold }),
    ...(b.timeout_duration_secs === undefined ? {} : { timeoutDurationSecs: b.timeout_duration_secs }),
    ...(b.window_duration_secs === undefined ? {} : { windowDurationSecs: b.window_duration_secs }),
    ...(b.disabled === undefined ? {} : { disabled: b.disabled }),
  };
}

function retryOverrides(r: RetryBody): NonNullable<WorkerSpec['retry']> {
  return {
    ...(r.max_retries === undefined ? {} : { maxRetries: r.max_retries }),
    ...(r.initial_backoff_ms === undefined ? {} : { initialBackoffMs: r.initial_backoff_ms }),
    ...(r.max_backoff_ms === undefined ? {} : { maxBackoffMs: r.max_backoff_ms }),
    ...(r.backoff_multiplier === undefined ? {} : { backoffMultiplier: r.backoff_multiplier }),
    ...(r.jitter_factor === undefined ? {} : { jitterFactor: r.jitter_factor }),
    ...(r.disabled === undefined ? {} : { disabled: r.disabled }),
  };
}

export function specFromBody(body: z.infer<typeof workerBody>): WorkerSpec {
  const models = body.models ?? (body.model_id === undefined ? undefined : [body.model_id]);
  return {
    url: body.url,
    ...(models === undefined ? {} : { models }),
    ...(body.role === undefined ? {} : { role: body.role }),
    ...(body.bootstrap_port === undefined ? {} : { bootstrapPort: body.bootstrap_port }),
    ...(body.priority === undefined ? {} : { priority: body.priority }),
    ...(body.circuit_breaker === undefined ? {} : { circuitBreaker: breakerOverrides(body.circuit_breaker) }),
    ...(body.retry === undefined ? {} : { retry: retryOverrides(body.retry) }),
  };
}

export function patchFromBody(body: z.infer<typeof workerPatchBody>): WorkerPatch {
  const patch: WorkerPatch = {};
  if (body.models !== undefined) patch.models = body.models;
  if (body.priority !== undefined) patch.priority = body.priority;
  if (body.circuit_breaker !== undefined) {
    patch.circuitBreaker = body.circuit_breaker === null ? null : breakerOverrides(body.circuit_breaker);
  }
  if (body.retry !== undefined) patch.retry = body.retry === null ? null : retryOverrides(body.retry);
  return patch;
}

/** Where a discovered worker came from: `discovered_by`, and the pod's name, UID and namespace. */
function sourceView(s: WorkerSource) {
  return {
    discovered_by: s.discovery,
    ...(s.pod === undefined ? {} : { pod: s.pod }),
    ...(s.uid === undefined ? {} : { pod_uid: s.uid }),
    ...(s.namespace === undefined ? {} : { namespace: s.namespace }),
  };
}

/** A worker on the wire. */
export function workerView(w: WorkerInfo) {
  return {
    id: w.id,
    url: w.url,
    role: w.role,
    models: w.models,
    ...(w.dpRank === undefined ? {} : { dp_rank: w.dpRank }),
    ...(w.bootstrapPort === undefined ? {} : { bootstrap_port: w.bootstrapPort }),
    ...(w.source === undefined ? {} : sourceView(w.source)),
    healthy: w.healthy,
    draining: w.draining,
    ...(w.suspended ? { suspended: true } : {}),
    circuit: w.circuit,
    load: w.load,
    processed: w.processed,
    ...(w.priority === undefined ? {} : { priority: w.priority }),
    ...(w.circuitBreaker === undefined ? {} : { circuit_breaker: w.circuitBreaker }),
    ...(w.retry === undefined ? {} : { retry: w.retry }),
  };
}

/** "field.path: message" for the first problems zod found. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((i) => `${i.path.length > 0 ? i.path.join('.') : 'body'}: ${i.message}`)
    .join('; ');
}
