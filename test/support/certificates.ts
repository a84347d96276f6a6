/**
 * Throwaway certificates for TLS tests (openssl, in a 0700 temp folder the caller removes): a CA and
 * certificates it signs for a DNS name, valid for a day or only on 1 January 2001 (expired).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestPki {
  readonly dir: string;
  readonly caCert: string;
  /** A certificate for `dnsName` (a wildcard is fine), signed by the CA; returns its file and its key's. */
  issue(name: string, dnsName: string, options?: { expired?: boolean }): { cert: string; key: string };
  remove(): void;
}

export function testPki(): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'eva-test-pki-'));
  const openssl = (args: readonly string[]): void => {
    execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  };
  openssl(['ecparam', '-genkey', '-name', 'prime256v1', '-noout', '-out', 'ca.key']);
  openssl(['req', '-x509', '-new', '-key', 'ca.key', '-subj', '/CN=eva-test-ca', '-days', '1', '-out', 'ca.crt',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign']);
  // `openssl ca` (not x509) so that the validity dates can be set: openssl 3.0's x509 cannot.
  writeFileSync(join(dir, 'ca.cnf'), '[ca]\ndefault_ca=x\n[x]\ndatabase=index.txt\nnew_certs_dir=.\nserial=serial\ndefault_md=sha256\npolicy=p\nunique_subject=no\n[p]\ncommonName=supplied\n');
  writeFileSync(join(dir, 'index.txt'), '');
  writeFileSync(join(dir, 'serial'), '01\n');
  return {
    dir,
    caCert: join(dir, 'ca.crt'),
    issue(name, dnsName, options = {}) {
      openssl(['ecparam', '-genkey', '-name', 'prime256v1', '-noout', '-out', `${name}.key`]);
      openssl(['req', '-new', '-key', `${name}.key`, '-subj', `/CN=${dnsName}`, '-out', `${name}.csr`]);
      writeFileSync(join(dir, `${name}.ext`), `subjectAltName=DNS:${dnsName}\nextendedKeyUsage=serverAuth\n`);
      const dates = options.expired ? ['-startdate', '20010101000000Z', '-enddate', '20010102000000Z'] : ['-days', '1'];
      openssl(['ca', '-batch', '-config', 'ca.cnf', '-cert', 'ca.crt', '-keyfile', 'ca.key', '-in', `${name}.csr`, ...dates,
        '-extfile', `${name}.ext`, '-notext', '-out', `${name}.crt`]);
      return { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
    },
    remove() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
