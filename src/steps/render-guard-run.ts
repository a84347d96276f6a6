/**
 * The operator's side of the render guard (steps/render-guard.ts): the policy of one release, handed
 * to helm's post-renderer through the environment (never an argument), and the guard's refusals read
 * back as the tenant's problem, RenderRejected naming the object or image.
 *
 * Crash safety: the check and the apply are one `helm upgrade --install` process; helm applies only
 * what the guard printed, within that process. No "checked, not yet applied" state outlives it: after
 * a crash at any point the release is absent, failed or pending, ensure runs helm again (unlocking a
 * pending release first, release-state.ts), and that call renders and checks anew. Nothing unchecked
 * can be applied, however the previous attempt ended.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PostRenderer } from '../adapters/helm.ts';
import type { ModuleImage } from '../bundle/images.ts';
import { Reason } from '../api/reasons.ts';
import type { RenderGuardSettings } from '../config.ts';
import { InputError } from '../errors.ts';
import { type GuardReport, refusalMessage, type RenderPolicy } from './render-guard.ts';

/** The plugin's name (helm-plugins/eva-render-guard/plugin.yaml). */
export const RENDER_GUARD_PLUGIN = 'eva-render-guard';

/** The reference the module chart prints for an image (eva-module-lib.image): by digest when there is one. */
export const imageReference = (image: ModuleImage): string =>
  image.digest !== undefined && image.digest !== '' ? `${image.repository}@${image.digest}` : `${image.repository}:${image.tag}`;

function readReport(reportFile: string): GuardReport | undefined {
  try {
    return JSON.parse(readFileSync(reportFile, 'utf8')) as GuardReport;
  } catch {
    return undefined;
  }
}

/**
 * Runs `apply` (one helm call) with the guard as its post-renderer and returns what the guard cost.
 * A refusal becomes InputError RenderRejected; any other failure (the guard could not start or
 * judge, helm failed) stays what it was.
 */
export async function withRenderGuard(
  settings: RenderGuardSettings,
  policy: RenderPolicy,
  apply: (postRenderer: PostRenderer) => Promise<void>,
): Promise<GuardReport['cost'] | undefined> {
  const dir = mkdtempSync(join(tmpdir(), 'eva-render-guard-'));
  const reportFile = join(dir, 'report.json');
  try {
    await apply({
      plugin: RENDER_GUARD_PLUGIN,
      env: {
        EVA_RENDER_GUARD_NODE: settings.node,
        EVA_RENDER_GUARD_ENTRY: settings.entry,
        EVA_RENDER_GUARD_POLICY: JSON.stringify(policy),
        EVA_RENDER_GUARD_REPORT: reportFile,
      },
    });
    return readReport(reportFile)?.cost;
  } catch (err) {
    const refusals = readReport(reportFile)?.refusals ?? [];
    if (refusals.length === 0) throw err;
    throw new InputError(Reason.RenderRejected, refusalMessage(refusals), { cause: err });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
