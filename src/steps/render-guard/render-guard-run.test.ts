/**
 * The operator's side of the render guard: the check served over the private unix socket
 * (render-guard-server.ts) and withRenderGuard around one helm call, with `apply` speaking the
 * exchange as the post-renderer client does (the real helm and client:
 * test/steps/render-guard-plugin.test.ts; end to end: e2e/confinement/render-guard.test.ts).
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { renderGuardSettings } from '../../config.ts';
import { DependencyError, InputError } from '../../errors.ts';
import type { RenderPolicy } from './render-guard.ts';
import { RENDER_GUARD_PLUGIN } from '../../adapters/helm-cli.ts';
import type { PostRenderer } from '../../adapters/helm.ts';
import { imageReference, withRenderGuard } from './render-guard-run.ts';
import { RenderGuardServer } from './render-guard-server.ts';

const NS = 'eva-tenant-abcdef';
const IMAGE = 'r/orbit-crm:1.0.0';
const policy: RenderPolicy = { namespace: NS, release: 'orbit-crm', images: [IMAGE] };
const parent = mkdtempSync(join(tmpdir(), 'eva-guard-test-'));
afterAll(() => {
  rmSync(parent, { recursive: true, force: true });
});

const configMap = (namespace = NS): string => stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'orbit-crm-config', namespace }, data: { a: '1' } });

/** One exchange as the post-renderer client makes it: the raw reply. */
function ask(socketPath: string, request: string | Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect({ path: socketPath, allowHalfOpen: true });
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('end', () => { resolve(Buffer.concat(chunks)); });
    socket.on('error', reject);
    socket.end(request);
  });
}

/** `apply` standing in for helm: posts the manifests to the socket with the token, as helm's post-renderer does. */
const postRender = (manifests: string, replies: Buffer[] = []) => async ({ socket, token }: PostRenderer): Promise<void> => {
  const reply = await ask(socket, `${token} 2500000 500000\n${manifests}`);
  replies.push(reply);
  if (!reply.toString().startsWith('allow ')) throw new DependencyError('HelmFailed', 'helm upgrade orbit-crm: plugin "eva-render-guard" exited with error');
};

describe('the render guard server', () => {
  it('listens in a folder private to this user and answers an allowed render with exactly the checked bytes', async () => {
    const server = await RenderGuardServer.start(parent);
    try {
      expect(statSync(dirname(server.socketPath)).mode & 0o777).toBe(0o700);
      expect(statSync(server.socketPath).isSocket()).toBe(true);
      using call = server.register(policy);
      const reply = (await ask(server.socketPath, `${call.token} 3000000 1000000\n${configMap()}`)).toString();
      const newline = reply.indexOf('\n');
      const [header, body] = [reply.slice(0, newline + 1), reply.slice(newline + 1)];
      expect(header).toBe(`allow ${String(Buffer.byteLength(body))}\n`);
      expect(JSON.parse(body.replace(/^---\n/, ''))).toMatchObject({ kind: 'ConfigMap', metadata: { namespace: NS } });
      expect(call.refusals).toEqual([]);
      // The client's own CPU (3 ms) plus the check's, measured here.
      expect(call.cost?.clientCpuMs).toBe(3);
      expect(call.cost?.checkCpuMs).toBeGreaterThan(0);
      expect(call.cost?.cpuMs).toBeCloseTo(3 + (call.cost?.checkCpuMs ?? 0), 1);
      expect(call.cost?.ms).toBeGreaterThan(4);
    } finally {
      await server.close();
    }
    expect(existsSync(dirname(server.socketPath))).toBe(false);
  });

  it('refuses a token it never registered, or no longer holds, without judging anything (positive control: the live token is allowed)', async () => {
    const server = await RenderGuardServer.start(parent);
    try {
      const call = server.register(policy);
      expect((await ask(server.socketPath, `${call.token} 0 0\n${configMap()}`)).toString()).toMatch(/^allow \d+\n/);
      expect((await ask(server.socketPath, `${'0'.repeat(64)} 0 0\n${configMap()}`)).toString()).toMatch(/^refuse\nan unknown or expired render guard token/);
      expect((await ask(server.socketPath, configMap())).toString()).toMatch(/^refuse\nan unknown/);
      call[Symbol.dispose]();
      expect((await ask(server.socketPath, `${call.token} 0 0\n${configMap()}`)).toString()).toMatch(/^refuse\nan unknown/);
      expect(call.refusals).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it('refuses a request larger than any release renders, without holding it', async () => {
    const server = await RenderGuardServer.start(parent);
    try {
      using call = server.register(policy);
      const reply = await ask(server.socketPath, Buffer.concat([Buffer.from(`${call.token} 0 0\n`), Buffer.alloc(33 * 2 ** 20, 0x61)]));
      expect(reply.toString()).toMatch(/^refuse\nthe rendered manifests exceed \d+ bytes/);
      expect(call.cost).toBeUndefined();
    } finally {
      await server.close();
    }
  });

  it('that cannot start says why (the operator then does not start: no release is ever unguarded)', async () => {
    const deep = join(parent, 'x'.repeat(120));
    mkdirSync(deep);
    await expect(RenderGuardServer.start(deep)).rejects.toThrow(/too long for a unix socket \(set TMPDIR shorter\)/);
    // The folder it made for the socket is gone again.
    expect(readdirSync(deep)).toEqual([]);
  });
});

describe('withRenderGuard', () => {
  // The operator's guard, served from its start to its stop.
  let guard: RenderGuardServer;
  beforeAll(async () => {
    guard = await RenderGuardServer.start(parent);
  });
  afterAll(async () => {
    await guard.close();
  });

  it('hands the post-renderer only a socket and a token (the policy stays in the operator), and returns the cost', async () => {
    let seen: PostRenderer | undefined;
    const replies: Buffer[] = [];
    const cost = await withRenderGuard(guard, policy, async (postRenderer) => {
      seen = postRenderer;
      await postRender(configMap(), replies)(postRenderer);
    });
    expect(Object.keys(seen ?? {}).sort()).toEqual(['socket', 'token']);
    expect(seen?.token).toMatch(/^[0-9a-f]{64}$/);
    expect(dirname(seen?.socket ?? '')).toMatch(new RegExp(`^${parent}/eva-render-guard-`));
    expect(replies[0]?.toString()).toMatch(/^allow /);
    expect(cost).toMatchObject({ clientCpuMs: 2.5 });
    // The token is spent once the call returns: a late post-renderer with it is refused.
    expect((await ask(seen?.socket ?? '', `${seen?.token ?? ''} 0 0\n${configMap()}`)).toString()).toMatch(/^refuse\nan unknown/);
  });

  it("turns the guard's refusals into InputError RenderRejected naming each object", async () => {
    const err = await withRenderGuard(guard, policy, postRender(configMap('kube-system'))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputError);
    expect(err).toMatchObject({ reason: 'RenderRejected', message: `the render guard refused: ConfigMap/kube-system/orbit-crm-config: only namespace ${NS} is allowed` });
    expect((err as InputError).cause).toBeInstanceOf(DependencyError);
  });

  it('keeps any other failure as it was: helm failed without the guard refusing, or the guard was never asked', async () => {
    const failure = new DependencyError('HelmFailed', 'the API server refused');
    await expect(withRenderGuard(guard, policy, () => Promise.reject(failure))).rejects.toBe(failure);
    await expect(
      withRenderGuard(guard, policy, async (postRenderer) => {
        await postRender(configMap())(postRenderer);
        throw failure;
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
  it('in a checkout: the plugin folder holds eva-render-guard and its client; the socket goes under TMPDIR', () => {
    const found = renderGuardSettings();
    expect(existsSync(join(found.pluginsDir, RENDER_GUARD_PLUGIN, 'plugin.yaml'))).toBe(true);
    expect(existsSync(join(found.pluginsDir, RENDER_GUARD_PLUGIN, 'guard-client.pl'))).toBe(true);
    expect(found.runtimeDir).toBe(tmpdir());
  });
});
