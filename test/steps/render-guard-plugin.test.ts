/**
 * The render guard as helm runs it: the real (pinned) Helm 4 with the post-renderer plugin
 * helm-plugins/eva-render-guard (its client, guard-client.pl), the operator's side (withRenderGuard
 * and the check it serves on a unix socket). `helm template` runs the same post-render code as
 * install and upgrade, without a cluster; e2e/confinement/render-guard.test.ts applies through it.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { guardPlugin } from '../../src/adapters/helm-cli.ts';
import type { PostRenderer } from '../../src/adapters/helm.ts';
import { renderGuardSettings } from '../../src/config.ts';
import { InputError } from '../../src/errors.ts';
import { withRenderGuard } from '../../src/steps/render-guard/render-guard-run.ts';
import type { RenderPolicy } from '../../src/steps/render-guard/render-guard.ts';
import { renderGuardForFile } from '../support/render-guard.ts';
import { repoRoot, tool } from '../support/tools.ts';

const NS = 'eva-tenant-abcdef';
const IMAGE = 'ghcr.io/aidonow/orbit-crm:1.0.0';
const POLICY: RenderPolicy = { namespace: NS, release: 'orbit-crm', images: [IMAGE] };
const settings = renderGuardSettings();
const renderGuard = renderGuardForFile();
const scratch = mkdtempSync(join(tmpdir(), 'eva-guard-plugin-'));
afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
});

/** `helm template` of orbit-crm through the post-renderer; resolves with helm's stdout. */
function template(postRenderer: PostRenderer, set: readonly string[] = []): Promise<string> {
  const guard = guardPlugin(postRenderer);
  const args = ['template', 'orbit-crm', join(repoRoot, 'charts/modules/orbit-crm'), '--namespace', NS, '--set', 'tenant.code=ABCDEF', ...guard.args];
  for (const value of set) args.push('--set', value);
  return new Promise((resolve, reject) => {
    execFile(tool('helm'), args, { env: { PATH: process.env['PATH'] ?? '', HOME: tmpdir(), HELM_PLUGINS: settings.pluginsDir, ...guard.env } }, (error, stdout, stderr) => {
      if (error === null) resolve(stdout);
      else reject(new Error(stderr));
    });
  });
}

const kinds = (out: string): string[] => (out.match(/^\{"apiVersion".*$/gm) ?? []).map((line) => (JSON.parse(line) as { kind: string }).kind).sort();

/** A stand-in for an operator that dies mid-check: it takes the request, then sends `reply` and hangs up. */
async function dyingOperator(reply: string): Promise<{ socket: string; server: Server }> {
  const socket = join(scratch, `dying-${String(Math.random()).slice(2)}.sock`);
  const server = createServer({ allowHalfOpen: true }, (connection) => {
    connection.on('data', () => undefined);
    connection.on('end', () => connection.end(reply));
  });
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  return { socket, server };
}

describe('the render guard plugin under the real helm', () => {
  it('lets the chart through: helm prints the objects the guard checked, and the guard reports its cost', async () => {
    let out = '';
    const cost = await withRenderGuard(renderGuard(), POLICY, async (postRenderer) => {
      out = await template(postRenderer);
    });
    expect(kinds(out)).toEqual(['ConfigMap', 'Deployment', 'Secret', 'Service']);
    // The client's CPU (from /proc/self/schedstat) and the check's in the operator: logged with each
    // release, printed by bench:provision (how small it is is a benchmark's figure, not an assertion
    // that a busy machine would break).
    expect(cost?.clientCpuMs).toBeGreaterThan(0);
    expect(cost?.checkCpuMs).toBeGreaterThan(0);
    expect(cost?.cpuMs).toBeCloseTo((cost?.clientCpuMs ?? 0) + (cost?.checkCpuMs ?? 0), 1);
  });

  it('refuses an image outside the catalogue: helm renders nothing, RenderRejected names the object and the image', async () => {
    const err = await withRenderGuard(renderGuard(), POLICY, (postRenderer) => template(postRenderer, ['image.tag=evil']).then(() => undefined)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputError);
    expect((err as InputError).reason).toBe('RenderRejected');
    expect((err as InputError).message).toBe(
      `the render guard refused: Deployment/${NS}/orbit-crm: image ghcr.io/aidonow/orbit-crm:evil is not in the catalogue (allowed: ${IMAGE})`,
    );
  });

  it('a post-renderer the operator did not register (wrong token, no socket, no plugin) fails closed: helm renders nothing', async () => {
    const wrongToken = await withRenderGuard(renderGuard(), POLICY, (postRenderer) =>
      template({ ...postRenderer, token: 'f'.repeat(64) }).then(() => undefined),
    ).catch((e: unknown) => e);
    expect(wrongToken).not.toBeInstanceOf(InputError);
    expect((wrongToken as Error).message).toContain('plugin "eva-render-guard" exited with error');

    const noSocket = await withRenderGuard(renderGuard(), POLICY, (postRenderer) =>
      template({ ...postRenderer, socket: join(scratch, 'absent.sock') }).then(() => undefined),
    ).catch((e: unknown) => e);
    expect(noSocket).not.toBeInstanceOf(InputError);
    expect((noSocket as Error).message).toContain('plugin "eva-render-guard" exited with error');

    // Without a socket or token at all, helm refuses to render rather than skipping the check.
    const missing = await template({ socket: '', token: '' }).catch((e: unknown) => e);
    expect((missing as Error).message).toMatch(/eva-render-guard/);
  });

  it('an operator that dies mid-reply: the client prints nothing of a partial answer, helm renders nothing (positive control: the whole answer passes)', async () => {
    const object = '---\n{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"orbit-crm-config"}}\n';
    const ticket = (socket: string): PostRenderer => ({ socket, token: 'a'.repeat(64) });
    const cut = await dyingOperator(`allow ${String(object.length)}\n${object.slice(0, 30)}`);
    const silent = await dyingOperator('');
    const whole = await dyingOperator(`allow ${String(object.length)}\n${object}`);
    try {
      for (const dying of [cut, silent]) {
        const err = await template(ticket(dying.socket)).catch((e: unknown) => e);
        expect((err as Error).message).toContain('plugin "eva-render-guard" exited with error');
      }
      expect(kinds(await template(ticket(whole.socket)))).toEqual(['ConfigMap']);
    } finally {
      for (const { server } of [cut, silent, whole]) server.close();
    }
  });
});
