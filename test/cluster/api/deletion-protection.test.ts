/**
 * spec.deletionProtection is enforced by the API server (a ValidatingAdmissionPolicy), not by the
 * operator: no operator runs against these tenants, and a protected DELETE is still refused. The
 * unprotected twin, deleted the same way, is the positive control.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { eventually, kubectl, kubectlOk, tenantManifest } from '../../support/kubectl.ts';
import { repoRoot, tool } from '../../support/tools.ts';
import { spawnSync } from 'node:child_process';

const LABEL = 'eva.aidonow.com/test=deletion-protection';
const names = ['dp-guarded', 'dp-open', 'dp-lifted'];

function apply(name: string, code: string, deletionProtection: boolean): void {
  kubectlOk(['apply', '-f', '-'], tenantManifest(name, { capsuleCode: code, tier: 'Starter', deletionProtection }, { 'eva.aidonow.com/test': 'deletion-protection' }));
}

const exists = (name: string): boolean => kubectl(['get', 'evt', name]).status === 0;

describe('deletion protection (ValidatingAdmissionPolicy, no operator running)', () => {
  beforeAll(async () => {
    kubectlOk(['apply', '-f', join(repoRoot, 'crds')]);
    kubectlOk(['wait', '--for=condition=Established', '--timeout=60s', 'crd/evatenants.eva.aidonow.com']);
    // No operator at all: no eva-operator may hold a Lease for this test to mean anything (an operator
    // an earlier test file stopped may hold its Lease until it expires; stale ones stay behind).
    const held = (): string[] => {
      const leases = JSON.parse(kubectlOk(['get', 'leases', '-A', '-o', 'json'])) as {
        items: { metadata: { name: string }; spec: { renewTime?: string; leaseDurationSeconds?: number } }[];
      };
      return leases.items
        .filter((l) => l.metadata.name.startsWith('eva-operator-') && Date.parse(l.spec.renewTime ?? '') + (l.spec.leaseDurationSeconds ?? 0) * 1000 > Date.now())
        .map((l) => l.metadata.name);
    };
    expect(await eventually(() => held().length === 0, 60_000, 1_000), `Leases held: ${held().join(', ')}`).toBe(true);
  });

  afterAll(() => {
    for (const name of names) kubectl(['patch', 'evt', name, '--type=merge', '-p', '{"spec":{"deletionProtection":false}}']);
    kubectl(['delete', 'evt', ...names, '--ignore-not-found', '--wait=false']);
  });

  it('is installed by dev-cluster.sh up as the chart renders it', () => {
    const binding = kubectlOk(['get', 'validatingadmissionpolicybinding', 'eva-tenant-deletion-protection', '-o', 'jsonpath={.spec.policyName}/{.spec.validationActions}']);
    expect(binding).toBe('eva-tenant-deletion-protection/["Deny"]');
    // The validation in the API server is the one the chart renders: one source for both installs.
    const rendered = spawnSync(tool('helm'), ['template', 'eva', join(repoRoot, 'charts/eva-operator'), '--set', 'nats.url=nats://127.0.0.1:4222', '--show-only', 'templates/deletion-protection.yaml'], { encoding: 'utf8' });
    expect(rendered.stderr).toBe('');
    const policy = parseAllDocuments(rendered.stdout).map((d) => d.toJS() as { kind?: string; spec?: { validations?: unknown } }).find((d) => d.kind === 'ValidatingAdmissionPolicy');
    const live = JSON.parse(kubectlOk(['get', 'validatingadmissionpolicy', 'eva-tenant-deletion-protection', '-o', 'json'])) as { spec: { validations: unknown } };
    expect(live.spec.validations).toEqual(policy?.spec?.validations);
    // A shard's release leaves the cluster-wide policy to the default one.
    const off = spawnSync(tool('helm'), ['template', 'eva-eu', join(repoRoot, 'charts/eva-operator'), '--set', 'nats.url=nats://127.0.0.1:4222', '--set', 'deletionProtectionPolicy=false'], { encoding: 'utf8' });
    expect(off.stdout).not.toContain('eva-tenant-deletion-protection');
  });

  it('refuses DELETE of a protected tenant with a message saying how to lift it; an unprotected one is deleted', () => {
    apply('dp-guarded', 'DPGUAR', true);
    apply('dp-open', 'DPOPEN', false);
    const refused = kubectl(['delete', 'evt', 'dp-guarded', '--wait=false']);
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain('ValidatingAdmissionPolicy');
    expect(refused.stderr).toContain('spec.deletionProtection: true');
    expect(refused.stderr).toContain(`kubectl patch evatenant dp-guarded --type=merge -p '{"spec":{"deletionProtection":false}}'`);
    expect(exists('dp-guarded')).toBe(true);
    // Positive control: the same DELETE, unprotected, goes through (no operator, so no finalizer holds it).
    expect(kubectl(['delete', 'evt', 'dp-open', '--wait=true', '--timeout=30s']).status).toBe(0);
    expect(exists('dp-open')).toBe(false);
  });

  it('refuses the protected tenant in a deletecollection too, and lets it go once lifted', () => {
    apply('dp-lifted', 'DPLIFT', true);
    const collection = kubectl(['delete', '--raw', `/apis/eva.aidonow.com/v1alpha1/evatenants?labelSelector=${encodeURIComponent(LABEL)}`]);
    expect(collection.status).not.toBe(0);
    expect(collection.stderr).toContain('spec.deletionProtection: true');
    expect(exists('dp-guarded') && exists('dp-lifted')).toBe(true);
    kubectlOk(['patch', 'evt', 'dp-lifted', '--type=merge', '-p', '{"spec":{"deletionProtection":false}}']);
    expect(kubectl(['delete', 'evt', 'dp-lifted', '--wait=true', '--timeout=30s']).status).toBe(0);
    expect(exists('dp-lifted')).toBe(false);
    expect(exists('dp-guarded')).toBe(true);
  });
});
