/**
 * What discovery watches, from the config: one label selector per role. Without PD, --selector's
 * pods are regular workers. With PD, --prefill-selector and --decode-selector (each added to
 * --selector) give one watch per role; or, production-stack's way, one watch on --selector whose
 * pods get their role from a label (`model`, or --k8s-model-label) whose value is one of
 * --prefill-model-labels / --decode-model-labels.
 */
import { ConfigError } from '../../core/config/errors.ts';
import type { RouterConfig } from '../../core/config/schema.ts';
import type { WorkerRole } from '../../core/contracts/fleet-api.ts';
import type { PodRules } from './k8s-pods.ts';

/** sglang's name for the bootstrap port annotation, read after the configured one. */
export const SGLANG_BOOTSTRAP_ANNOTATION = 'sglang.ai/bootstrap-port';

export interface WatchTarget {
  role: WorkerRole | 'label';
  /** `k=v,k2=v2`, as the API server takes it. */
  labelSelector: string;
  rules: PodRules;
}

const joined = (...parts: readonly string[][]): string => [...new Set(parts.flat())].join(',');

export function watchPlan(config: RouterConfig): WatchTarget[] {
  const d = config.discovery;
  const { pd } = config;
  const annotations = [...new Set([d.bootstrapPortAnnotation, SGLANG_BOOTSTRAP_ANNOTATION])];
  const base = { port: d.port, bootstrapAnnotations: annotations };
  const withModels = d.modelLabel === undefined ? base : { ...base, modelLabel: d.modelLabel };
  const bySelector = d.prefillSelector.length > 0 || d.decodeSelector.length > 0;
  const byLabel = pd.prefillLabels.length > 0 || pd.decodeLabels.length > 0;
  let targets: WatchTarget[];
  if (!pd.enabled) {
    if (bySelector) {
      const flag = d.prefillSelector.length > 0 ? '--prefill-selector' : '--decode-selector';
      throw new ConfigError(`${flag} needs --vllm-pd-disaggregation`, { flag });
    }
    targets = [
      { role: 'regular', labelSelector: joined(d.selector), rules: { ...withModels, role: 'regular' } },
    ];
  } else if (bySelector) {
    if (byLabel) {
      throw new ConfigError(
        '--prefill-selector/--decode-selector and --prefill-model-labels/--decode-model-labels both give pod roles: use one',
        { flag: '--prefill-selector' },
      );
    }
    targets = (['prefill', 'decode'] as const)
      .filter((role) => (role === 'prefill' ? d.prefillSelector : d.decodeSelector).length > 0)
      .map((role) => ({
        role,
        labelSelector: joined(d.selector, role === 'prefill' ? d.prefillSelector : d.decodeSelector),
        rules: { ...withModels, role },
      }));
  } else if (byLabel) {
    // The label names a role here, not a model: models come from each pod's /v1/models.
    const rules: PodRules = {
      ...base,
      role: 'label',
      roleLabel: d.modelLabel ?? 'model',
      prefillLabels: pd.prefillLabels,
      decodeLabels: pd.decodeLabels,
    };
    targets = [{ role: 'label', labelSelector: joined(d.selector), rules }];
  } else {
    throw new ConfigError(
      '--service-discovery with --vllm-pd-disaggregation needs pod roles: --prefill-selector and --decode-selector ' +
        '(or --prefill-model-labels and --decode-model-labels)',
      { flag: '--service-discovery' },
    );
  }
  if (d.namespace === undefined && targets.some((t) => t.labelSelector === '')) {
    throw new ConfigError(
      '--service-discovery without --selector would watch every pod of the cluster: give --selector ' +
        '(or --service-discovery-namespace)',
      { flag: '--selector' },
    );
  }
  return targets;
}
