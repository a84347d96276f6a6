/**
 * The render guard as helm runs it: the real (pinned) Helm 4 with the post-renderer plugin
 * helm-plugins/eva-render-guard, the operator's environment contract (withRenderGuard) and the guard
 * process (src/render-guard-cli.ts). `helm template` runs the same post-render code as install and
 * upgrade, without a cluster; e2e/confinement/render-guard.test.ts applies through it.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { PostRenderer } from '../../src/adapters/helm.ts';
import { renderGuardSettings } from '../../src/config.ts';
import { InputError } from '../../src/errors.ts';
import { withRenderGuard } from '../../src/steps/render-guard-run.ts';
import type { RenderPolicy } from '../../src/steps/render-guard.ts';
import { repoRoot, tool } from '../support/tools.ts';

const NS = 'eva-tenant-abcdef';
const IMAGE = 'ghcr.io/aidonow/orbit-crm:1.0.0';
const POLICY: RenderPolicy = { namespace: NS, release: 'orbit-crm', images: [IMAGE] };
const settings = renderGuardSettings();

/** `helm template` of orbit-crm through the post-renderer; resolves with helm's stdout. */
function template(postRenderer: PostRenderer, set: readonly string[] = []): Promise<string> {
  const args = ['template', 'orbit-crm', join(repoRoot, 'charts/modules/orbit-crm'), '--namespace', NS, '--set', 'tenant.code=ABCDEF', '--post-renderer', postRenderer.plugin];
  for (const value of set) args.push('--set', value);
  return new Promise((resolve, reject) => {
    execFile(tool('helm'), args, { env: { PATH: process.env['PATH'] ?? '', HOME: tmpdir(), HELM_PLUGINS: settings.pluginsDir, ...postRenderer.env } }, (error, stdout, stderr) => {
      if (error === null) resolve(stdout);
      else reject(new Error(stderr));
    });
  });
}

const guardFolders = (): string[] => readdirSync(tmpdir()).filter((name) => name.startsWith('eva-render-guard-'));
const foldersBefore = new Set(guardFolders());

describe('the render guard plugin under the real helm', () => {
  it('lets the chart through: helm prints the objects the guard checked', async () => {
    let out = '';
    const cost = await withRenderGuard(settings, POLICY, async (postRenderer) => {
      out = await template(postRenderer);
    });
    // The guard reports what its process cost (logged with each release; bench:provision sums it).
    expect(cost?.ms).toBeGreaterThan(0);
    expect(cost?.cpuMs).toBeGreaterThan(0);
    expect(out.match(/^\{"apiVersion".*$/gm)?.map((line) => (JSON.parse(line) as { kind: string }).kind).sort()).toEqual(['ConfigMap', 'Deployment', 'Secret', 'Service']);
  });

  it('refuses an image outside the catalogue: helm renders nothing, RenderRejected names the object and the image', async () => {
    const err = await withRenderGuard(settings, POLICY, (postRenderer) => template(postRenderer, ['image.tag=evil']).then(() => undefined)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputError);
    expect((err as InputError).reason).toBe('RenderRejected');
    expect((err as InputError).message).toBe(
      `the render guard refused: Deployment/${NS}/orbit-crm: image ghcr.io/aidonow/orbit-crm:evil is not in the catalogue (allowed: ${IMAGE})`,
    );
  });

  it('a guard that cannot judge (no policy) fails closed: helm applies nothing and the error stays a dependency problem', async () => {
    const err = await withRenderGuard(settings, POLICY, (postRenderer) =>
      template({ plugin: postRenderer.plugin, env: { ...postRenderer.env, EVA_RENDER_GUARD_POLICY: '' } }).then(() => undefined),
    ).catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(InputError);
    expect((err as Error).message).toContain('plugin "eva-render-guard" exited with error');
    // Without the plugin at all, helm refuses to render rather than skipping the check.
    const missing = await template({ plugin: 'eva-render-guard', env: {} }).catch((e: unknown) => e);
    expect((missing as Error).message).toMatch(/eva-render-guard/);
  });

  it('leaves no report folder behind, allowed or refused', () => {
    expect(existsSync(settings.entry)).toBe(true);
    expect(guardFolders().filter((name) => !foldersBefore.has(name))).toEqual([]);
  });
});
