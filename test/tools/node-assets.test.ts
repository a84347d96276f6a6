/**
 * test/tools/node-assets, the real node's certificates, kubeconfigs and images, built as the real node's
 * script builds it (test/tools/build.sh) and judged by real consumers: `openssl verify`
 * (chain and purpose) on each certificate, with a certificate of another node's CA as the negative
 * control; the pinned kubectl reading each kubeconfig; skopeo reading the OCI image layout. Its Go tests
 * (`go test`) run here too. e2e/real-node.test.ts is the whole thing: a node up on these files, the
 * pause and Traefik images pulled through its registry.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot, tool } from '../support/tools.ts';

const toolDir = join(repoRoot, 'test/tools/node-assets');
let assets = '';
let work = '';

const IDENTITIES = { apiserver: 'sslserver', 'apiserver-kubelet-client': 'sslclient', admin: 'sslclient', 'controller-manager': 'sslclient', scheduler: 'sslclient', kubelet: 'sslclient', 'kube-proxy': 'sslclient', 'kube-router': 'sslclient' } as const;
const KUBECONFIGS = { kubeconfig: 'admin', 'controller-manager.kubeconfig': 'controller-manager', 'scheduler.kubeconfig': 'scheduler', 'kubelet.kubeconfig': 'kubelet', 'kube-proxy.kubeconfig': 'kube-proxy', 'kube-router.kubeconfig': 'kube-router' } as const;

function pki(state: string): void {
  execFileSync(assets, ['pki', '--node-name', 'eva-real-node', '--node-ip', '10.254.0.1', '--service-ip', '10.96.0.1', '--api-port', '6443', join(state, 'pki'), state], { stdio: ['ignore', 'ignore', 'pipe'] });
}

/** `openssl verify`: status 0 and "OK" when the certificate chains to the CA for the purpose. */
function verify(ca: string, cert: string, ...options: string[]): { ok: boolean; output: string } {
  const r = spawnSync('openssl', ['verify', '-CAfile', ca, ...options, cert], { encoding: 'utf8' });
  return { ok: r.status === 0 && r.stdout.includes(': OK'), output: `${r.stdout}${r.stderr}` };
}

beforeAll(() => {
  assets = execFileSync(join(repoRoot, 'test/tools/build.sh'), ['node-assets'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 300_000 }).trim();
  work = mkdtempSync(join(tmpdir(), 'eva-node-assets-'));
}, 300_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('node-assets pki', () => {
  it('writes certificates that openssl verifies against their CA for their purpose, and a certificate of another CA that it refuses', () => {
    const mine = join(work, 'node-a');
    const other = join(work, 'node-b');
    pki(mine);
    pki(other);
    const ca = join(mine, 'pki/ca.crt');
    for (const [name, purpose] of Object.entries(IDENTITIES)) {
      const r = verify(ca, join(mine, `pki/${name}.crt`), '-purpose', purpose);
      expect(r.ok, `${name}: ${r.output}`).toBe(true);
      expect(statSync(join(mine, `pki/${name}.key`)).mode & 0o777, name).toBe(0o600);
    }
    // The API server's names, as in-cluster clients and the node reach it.
    for (const check of [['-verify_hostname', 'kubernetes.default.svc'], ['-verify_ip', '10.96.0.1'], ['-verify_ip', '10.254.0.1'], ['-verify_ip', '127.0.0.1']]) {
      expect(verify(ca, join(mine, 'pki/apiserver.crt'), '-purpose', 'sslserver', ...check).ok, check.join(' ')).toBe(true);
    }
    // Negative controls: another node's certificate; a name the API server's does not carry; a client
    // certificate used as a server's.
    expect(verify(ca, join(other, 'pki/admin.crt'), '-purpose', 'sslclient').ok).toBe(false);
    expect(verify(ca, join(mine, 'pki/apiserver.crt'), '-purpose', 'sslserver', '-verify_ip', '10.254.0.2').ok).toBe(false);
    expect(verify(ca, join(mine, 'pki/admin.crt'), '-purpose', 'sslserver').ok).toBe(false);
    const subject = execFileSync('openssl', ['x509', '-in', join(mine, 'pki/kubelet.crt'), '-noout', '-subject', '-nameopt', 'RFC2253'], { encoding: 'utf8' });
    expect(subject.trim()).toBe('subject=CN=system:node:eva-real-node,O=system:nodes');
    // The ServiceAccount pair: the public key is the private key's.
    const derived = execFileSync('openssl', ['ec', '-in', join(mine, 'pki/sa.key'), '-pubout'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    expect(derived).toBe(readFileSync(join(mine, 'pki/sa.pub'), 'utf8'));
  });

  it('writes kubeconfigs (0600) that kubectl reads: the node\'s API server, its CA and each identity\'s pair', () => {
    const state = join(work, 'node-c');
    pki(state);
    for (const [file, identity] of Object.entries(KUBECONFIGS)) {
      const path = join(state, file);
      expect(statSync(path).mode & 0o777, file).toBe(0o600);
      const view = (path_: string): string => execFileSync(tool('kubectl'), ['config', 'view', '--raw', '--kubeconfig', path_, '-o',
        'jsonpath={.clusters[0].cluster.server} {.users[0].name} {.clusters[0].cluster.certificate-authority-data} {.users[0].user.client-certificate-data} {.users[0].user.client-key-data}'], { encoding: 'utf8' });
      const [server, user, caData = '', certData = '', keyData = ''] = view(path).split(' ');
      expect([server, user], file).toEqual(['https://10.254.0.1:6443', identity]);
      expect(Buffer.from(caData, 'base64').toString()).toBe(readFileSync(join(state, 'pki/ca.crt'), 'utf8'));
      expect(Buffer.from(certData, 'base64').toString()).toBe(readFileSync(join(state, `pki/${identity}.crt`), 'utf8'));
      expect(Buffer.from(keyData, 'base64').toString()).toBe(readFileSync(join(state, `pki/${identity}.key`), 'utf8'));
    }
  });

  it('refuses an address that is not one (a value is data, never text in a command)', () => {
    const r = spawnSync(assets, ['pki', '--node-name', 'n', '--node-ip', '10.0.0.1; touch /tmp/x', '--service-ip', '10.96.0.1', '--api-port', '6443', join(work, 'bad/pki'), join(work, 'bad')], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('must be IP addresses');
  });
});

describe('node-assets oci-image', () => {
  it('writes a layout skopeo reads, the same bytes every time, blobs named by their sha256; another binary, another digest', () => {
    const binary = join(work, 'pause');
    writeFileSync(binary, Buffer.alloc(200_000, 'not really a binary '), { mode: 0o755 });
    const image = (layout: string): string => execFileSync(assets, ['oci-image', layout, binary, '65535:65535', '3.10'], { encoding: 'utf8' }).trim();
    const digest = image(join(work, 'image-1'));
    expect(image(join(work, 'image-2'))).toBe(digest);
    expect(digest).toMatch(/^sha256:[0-9a-f]{64}$/);

    const inspect = JSON.parse(execFileSync('skopeo', ['inspect', `oci:${join(work, 'image-1')}:3.10`], { encoding: 'utf8' })) as { Digest: string; Os: string; Layers: string[] };
    expect(inspect.Digest).toBe(digest);
    expect(inspect.Os).toBe('linux');
    expect(inspect.Layers).toHaveLength(1);
    const config = JSON.parse(execFileSync('skopeo', ['inspect', '--config', `oci:${join(work, 'image-1')}:3.10`], { encoding: 'utf8' })) as { config: { User: string; Entrypoint: string[] } };
    expect(config.config).toEqual({ User: '65535:65535', Entrypoint: ['/pause'] });
    const raw = execFileSync('skopeo', ['inspect', '--raw', `oci:${join(work, 'image-1')}:3.10`]);
    expect(`sha256:${createHash('sha256').update(raw).digest('hex')}`).toBe(digest);
    // skopeo copies it out whole, checking every blob against its digest on the way.
    execFileSync('skopeo', ['copy', '-q', `oci:${join(work, 'image-1')}:3.10`, `dir:${join(work, 'copied')}`]);
    const manifest = JSON.parse(raw.toString()) as { config: { digest: string; size: number }; layers: { digest: string; size: number }[] };
    for (const blob of [manifest.config, ...manifest.layers]) {
      const bytes = readFileSync(join(work, 'image-1/blobs/sha256', blob.digest.replace('sha256:', '')));
      expect(`sha256:${createHash('sha256').update(bytes).digest('hex')}`).toBe(blob.digest);
      expect(bytes.length).toBe(blob.size);
    }

    writeFileSync(binary, 'another binary');
    expect(image(join(work, 'image-3'))).not.toBe(digest);
  });
});

describe('node-assets go tests', () => {
  it('pass (go test)', () => {
    const r = spawnSync('go', ['test', '-count=1', '.'], { cwd: toolDir, encoding: 'utf8', env: { ...process.env, GOTOOLCHAIN: 'local', GOFLAGS: '-buildvcs=false -mod=readonly', CGO_ENABLED: '0' }, timeout: 240_000 });
    expect(r.status, `${r.stdout}${r.stderr}`).toBe(0);
  }, 300_000);
});
