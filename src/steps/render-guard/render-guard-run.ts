/**
 * The operator's side of the render guard (steps/render-guard/render-guard.ts): the policy of one release
 * registered with the guard the operator serves from its start to its stop (steps/render-guard/render-guard-server.ts), its token and socket
 * handed to helm's post-renderer (in the helm server's request, or the CLI plugin's environment;
 * never an argument), and the guard's refusals read back as the tenant's problem, RenderRejected
 * naming the object or image.
 *
 * Crash safety: the check and the apply are one `upgrade --install` call; helm applies only what the
 * guard returned, within that call. No "checked, not yet applied" state outlives it: after a crash at
 * any point the release is absent, failed or pending, ensure runs helm again (unlocking a pending
 * release first, release-state.ts), and that call renders and checks anew. If the operator dies while
 * helm runs, the post-renderer finds no socket, or an unfinished reply, and returns nothing: helm
 * applies nothing. Nothing unchecked can be applied, however the previous attempt ended.
 */
import type { PostRenderer } from '../../adapters/helm.ts';
import type { ModuleImage } from '../../bundle/images.ts';
import { Reason } from '../../api/reasons.ts';
import { InputError } from '../../errors.ts';
import { refusalMessage, type RenderPolicy } from './render-guard.ts';
import type { GuardCost, RenderGuard } from './render-guard-server.ts';

/** The reference the module chart prints for an image (eva-module-lib.image): by digest when there is one. */
export const imageReference = (image: ModuleImage): string =>
  image.digest !== undefined && image.digest !== '' ? `${image.repository}@${image.digest}` : `${image.repository}:${image.tag}`;

/**
 * Runs `apply` (one helm call) with the guard as its post-renderer and returns what the guard cost.
 * A refusal becomes InputError RenderRejected; any other failure (the guard could not judge, helm
 * failed) stays what it was.
 */
export async function withRenderGuard(guard: RenderGuard, policy: RenderPolicy, apply: (postRenderer: PostRenderer) => Promise<void>): Promise<GuardCost | undefined> {
  using call = guard.register(policy);
  try {
    await apply({ socket: guard.socketPath, token: call.token });
    return call.cost;
  } catch (err) {
    if (call.refusals.length === 0) throw err;
    throw new InputError(Reason.RenderRejected, refusalMessage(call.refusals), { cause: err });
  }
}
