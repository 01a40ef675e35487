/**
 * The Kubernetes manifests under deploy/kubernetes: they parse, grant discovery exactly what it uses
 * (get/list/watch on pods), probe /liveness and /readiness, and the router's args are a command line
 * this router accepts, with discovery on and the namespace the Role covers.
 */
import { readFileSync } from 'node:fs';
import { loadAllYaml } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/core/config/load.ts';

// biome-ignore lint/suspicious/noExplicitAny: manifests are walked by known paths; the assertions check them
type Doc = Record<string, any>;
const load = (name: string): Doc[] =>
  loadAllYaml(readFileSync(new URL(`../../deploy/kubernetes/${name}`, import.meta.url), 'utf8')) as Doc[];
const byKind = (docs: Doc[], kind: string) => docs.find((d) => d.kind === kind) as Doc;

describe('deploy/kubernetes', () => {
  it('rbac.yaml: a ServiceAccount, a Role reading pods only, bound to it', () => {
    const docs = load('rbac.yaml');
    const sa = byKind(docs, 'ServiceAccount');
    const role = byKind(docs, 'Role');
    const binding = byKind(docs, 'RoleBinding');
    expect(role.rules).toEqual([{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] }]);
    expect(binding.roleRef).toMatchObject({ kind: 'Role', name: role.metadata.name });
    expect(binding.subjects).toEqual([
      { kind: 'ServiceAccount', name: sa.metadata.name, namespace: sa.metadata.namespace },
    ]);
  });

  it('rbac-cluster.yaml: the same rights cluster-wide', () => {
    const docs = load('rbac-cluster.yaml');
    expect(byKind(docs, 'ClusterRole').rules).toEqual(
      load('rbac.yaml').find((d) => d.kind === 'Role')?.rules,
    );
    expect(byKind(docs, 'ClusterRoleBinding').roleRef.kind).toBe('ClusterRole');
  });

  it('router.yaml: probes, the service account, and args the router accepts', () => {
    const docs = load('router.yaml');
    const deployment = byKind(docs, 'Deployment');
    const pod = deployment.spec.template.spec;
    const [container] = pod.containers;
    expect(pod.serviceAccountName).toBe(byKind(load('rbac.yaml'), 'ServiceAccount').metadata.name);
    expect(container.livenessProbe.httpGet.path).toBe('/liveness');
    expect(container.readinessProbe.httpGet.path).toBe('/readiness');
    const { config } = resolveConfig({ argv: container.args, env: {}, readTextFile: () => '' });
    expect(config.discovery).toMatchObject({
      mode: 'k8s',
      namespace: deployment.metadata.namespace,
      port: 8000,
    });
    expect(config.server).toMatchObject({ host: '0.0.0.0', port: 8080 });
    // The pod is given more time than the router's drain delay and grace period.
    const { shutdownDrainDelaySecs, shutdownGraceSecs } = config.server;
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(shutdownDrainDelaySecs + shutdownGraceSecs);
    const service = byKind(docs, 'Service');
    expect(service.spec.selector).toEqual(deployment.spec.selector.matchLabels);
  });
});
