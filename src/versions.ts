/**
 * How versions compare, in one place: semver precedence (build metadata ignored) from the `semver`
 * package, on versions that are strict semver; a label that is not semver (a seeds folder named `custom`) sorts before every version.
 * Used for the catalogue's default image, the newest bundled seeds, and by scripts through
 * `eva-operator semver`.
 */
import semver from 'semver';
import { SEMVER_PATTERN } from './api/constants.ts';

const SEMVER = new RegExp(SEMVER_PATTERN);

/** Strict semver, as the CRD validates pins (no `v` prefix, unlike the semver package's parser). */
export const isSemver = (version: string): boolean => SEMVER.test(version);

export function compareVersions(a: string, b: string): number {
  const [va, vb] = [isSemver(a), isSemver(b)];
  if (va && vb) return semver.compare(a, b);
  if (va !== vb) return va ? 1 : -1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Whether a Kubernetes version (`v1.36.4`, `v1.31.2-eks-7f9249a`, `v1.30.1+k3s1`) satisfies a range as
 * Chart.yaml's kubeVersion writes it (`>=1.30.0-0`: the `-0` lets vendor suffixes, which read as
 * pre-releases, match, as helm's check does); undefined when the version is not readable.
 */
export function kubeVersionSatisfies(gitVersion: string, range: string): boolean | undefined {
  const version = semver.valid(gitVersion.replace(/^v/, ''));
  if (version === null) return undefined;
  return semver.satisfies(version, range, { includePrerelease: true });
}
