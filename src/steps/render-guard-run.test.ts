/**
 * The operator's side of the render guard, with `apply` standing in for the helm call (the real helm
 * and guard process: test/steps/render-guard-plugin.test.ts and e2e/confinement/render-guard.test.ts).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderGuardSettings } from '../config.ts';
import { DependencyError, InputError } from '../errors.ts';
import type { GuardReport, RenderPolicy } from './render-guard.ts';
import { imageReference, RENDER_GUARD_PLUGIN, withRenderGuard } from './render-guard-run.ts';

const settings = { pluginsDir: '/p', node: '/usr/local/bin/node', entry: '/app/dist/render-guard-cli.js' };
const policy: RenderPolicy = { namespace: 'eva-tenant-abcdef', release: 'orbit-crm', images: ['r/orbit-crm:1.0.0'] };
const COST = { ms: 80, cpuMs: 60 };

const writeReport = (env: Readonly<Record<string, string>>, report: GuardReport): void => {
  writeFileSync(env['EVA_RENDER_GUARD_REPORT'] ?? '', JSON.stringify(report));
};

describe('withRenderGuard', () => {
  it('hands the plugin its parameters in the environment only, and returns the cost the guard reported', async () => {
    let seen: { plugin: string; env: Readonly<Record<string, string>> } | undefined;
    const cost = await withRenderGuard(settings, policy, async (postRenderer) => {
      seen = postRenderer;
      writeReport(postRenderer.env, { refusals: [], cost: COST });
      await Promise.resolve();
    });
    expect(cost).toEqual(COST);
    expect(seen?.plugin).toBe(RENDER_GUARD_PLUGIN);
    expect(seen?.env).toMatchObject({ EVA_RENDER_GUARD_NODE: settings.node, EVA_RENDER_GUARD_ENTRY: settings.entry, EVA_RENDER_GUARD_POLICY: JSON.stringify(policy) });
    // The report's folder is gone once the call returns.
    expect(existsSync(seen?.env['EVA_RENDER_GUARD_REPORT'] ?? '/')).toBe(false);
  });

  it('turns the guard\'s refusals into InputError RenderRejected naming each object', async () => {
    const helmFailure = new DependencyError('HelmFailed', 'helm upgrade orbit-crm: plugin "eva-render-guard" exited with error');
    const err = await withRenderGuard(settings, policy, (postRenderer) => {
      writeReport(postRenderer.env, { refusals: [{ object: 'ConfigMap/kube-system/pwned', message: 'only namespace eva-tenant-abcdef is allowed' }], cost: COST });
      return Promise.reject(helmFailure);
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputError);
    expect(err).toMatchObject({ reason: 'RenderRejected', message: 'the render guard refused: ConfigMap/kube-system/pwned: only namespace eva-tenant-abcdef is allowed', cause: helmFailure });
  });

  it('keeps any other failure as it was: no report, or a report without refusals (the guard could not judge, or helm failed after it)', async () => {
    const failure = new DependencyError('HelmFailed', 'the API server refused');
    await expect(withRenderGuard(settings, policy, () => Promise.reject(failure))).rejects.toBe(failure);
    await expect(
      withRenderGuard(settings, policy, (postRenderer) => {
        writeReport(postRenderer.env, { refusals: [], cost: COST });
        return Promise.reject(failure);
      }),
    ).rejects.toBe(failure);
  });
});

describe('imageReference', () => {
  it('is what the module chart prints: repository@digest when there is a digest, else repository:tag', () => {
    expect(imageReference({ repository: 'ghcr.io/aidonow/orbit-crm', tag: '1.0.0', digest: `sha256:${'a'.repeat(64)}` })).toBe(`ghcr.io/aidonow/orbit-crm@sha256:${'a'.repeat(64)}`);
    expect(imageReference({ repository: 'mirror.local:5000/aidonow/orbit-crm', tag: '1.0.0' })).toBe('mirror.local:5000/aidonow/orbit-crm:1.0.0');
    expect(imageReference({ repository: 'r/orbit-crm', tag: '1.0.0', digest: '' })).toBe('r/orbit-crm:1.0.0');
  });
});

describe('renderGuardSettings', () => {
  it('in a checkout: the plugin folder holds eva-render-guard, the entry is the TypeScript source, node is this one', () => {
    const found = renderGuardSettings();
    expect(readFileSync(join(found.pluginsDir, RENDER_GUARD_PLUGIN, 'plugin.yaml'), 'utf8')).toMatch(/type: postrenderer\/v1[\s\S]*name: eva-render-guard/);
    expect(found.entry).toMatch(/src\/render-guard-cli\.ts$/);
    expect(existsSync(found.entry)).toBe(true);
    expect(found.node).toBe(process.execPath);
  });
});
