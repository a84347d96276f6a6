/**
 * `eva-operator tenant-manifest`: the EvaTenant that scripts/quickstart.sh and the air gap apply
 * (seeds 1.0.0, pinned to an operator version), built as an object, checked against the EvaTenant
 * schema and printed as YAML, so no value a user typed can become YAML structure.
 */
import { Command } from 'commander';
import { stringify } from 'yaml';
import { API_VERSION, KIND } from '../api/constants.ts';
import { InvalidTenantError, parseEvaTenant } from '../api/parse.ts';

export interface TenantManifestOptions {
  readonly name: string;
  readonly code: string;
  readonly tier: string;
  readonly wave: string;
  readonly operatorVersion: string;
}

/** The manifest as YAML; throws InvalidTenantError when the schema refuses it. */
export function tenantManifestYaml(options: TenantManifestOptions): string {
  const manifest = {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name: options.name },
    spec: {
      capsuleCode: options.code,
      tier: options.tier,
      wave: Number(options.wave),
      seedsVersion: '1.0.0',
      operatorVersion: options.operatorVersion,
    },
  };
  parseEvaTenant(manifest);
  return stringify(manifest);
}

export function tenantManifestCommand(): Command {
  return new Command('tenant-manifest')
    .description('print an EvaTenant manifest (seeds 1.0.0, pinned to an operator version) for kubectl apply -f -')
    .requiredOption('--name <name>', 'the object name')
    .requiredOption('--code <code>', 'the capsule code (six uppercase letters)')
    .requiredOption('--tier <tier>', 'Starter, Customer, Enterprise or Platform')
    .requiredOption('--wave <wave>', '1, 2 or 3')
    .requiredOption('--operator-version <version>', 'the operator version the tenant is pinned to (semver)')
    .action((options: TenantManifestOptions) => {
      try {
        process.stdout.write(tenantManifestYaml(options));
      } catch (err) {
        if (!(err instanceof InvalidTenantError)) throw err;
        process.stderr.write(`eva-operator tenant-manifest: ${err.message}\n`);
        process.exit(2);
      }
    });
}
