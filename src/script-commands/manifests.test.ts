import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { renderedImageSources, sectionOf, valueAt } from './manifests.ts';

/** As `helm template` prints a chart: each document after `---` and its `# Source:` comment. */
const RENDERED = `---
# Source: eva-operator/templates/serviceaccount.yaml
apiVersion: v1
kind: ServiceAccount
metadata:
  name: eva
---
# Source: eva-operator/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: eva
spec:
  template:
    metadata:
      annotations:
        # The same value as OPERATOR_VERSION below.
        eva.aidonow.com/operator-version: "1.2.0"
    spec:
      initContainers:
        - name: init
          image: "ghcr.io/aidonow/eva-operator:1.2.0"
      containers:
        - name: operator
          image: 'ghcr.io/aidonow/eva-operator:1.2.0'
          env:
            - {name: NOTE, value: "image: not-an-image:1"}
---
# Source: eva-operator/templates/nats.yaml
apiVersion: apps/v1
kind: StatefulSet
spec:
  template:
    spec:
      containers:
        - image: docker.io/library/nats:2.15.0-alpine@sha256:${'a'.repeat(64)}
`;

describe('manifests', () => {
  it('images: every image a document deploys, with the template it came from (a value that only mentions one is not)', () => {
    expect(renderedImageSources(RENDERED)).toEqual([
      'templates/deployment.yaml\tghcr.io/aidonow/eva-operator:1.2.0',
      'templates/deployment.yaml\tghcr.io/aidonow/eva-operator:1.2.0',
      `templates/nats.yaml\tdocker.io/library/nats:2.15.0-alpine@sha256:${'a'.repeat(64)}`,
    ]);
  });

  it('value: the scalar at a path, in the documents of one template; undefined when absent or not a scalar', () => {
    const path = ['spec', 'template', 'metadata', 'annotations', 'eva.aidonow.com/operator-version'];
    expect(valueAt(RENDERED, path, 'templates/deployment.yaml')).toBe('1.2.0');
    expect(valueAt(RENDERED, path, 'templates/nats.yaml')).toBeUndefined();
    expect(valueAt(RENDERED, ['spec', 'template'])).toBeUndefined();
    expect(valueAt('{"serverVersion": {"gitVersion": "v1.36.4"}}', ['serverVersion', 'gitVersion'])).toBe('v1.36.4');
  });

  it('section: one top-level key as YAML, as deep as it goes, long strings unwrapped', () => {
    const long = 'x'.repeat(120);
    const values = `image: {tag: "1"}\nnats:\n  enabled: true\n  auth:\n    operatorJwt: ${long}\n`;
    const section = sectionOf(values, 'nats') ?? '';
    expect(parse(section)).toEqual({ nats: { enabled: true, auth: { operatorJwt: long } } });
    expect(section).toContain(`operatorJwt: ${long}\n`);
    expect(sectionOf(values, 'spec')).toBeUndefined();
  });

  it('reads stdin for "-" and exits 1 when the value is absent', () => {
    const cli = join(import.meta.dirname, '../cli.ts');
    const run = (args: string[]) => spawnSync(process.execPath, [cli, 'manifests', ...args], { encoding: 'utf8', input: '{"gitVersion": "v1.36.4"}' });
    expect(run(['value', '-', 'gitVersion']).stdout).toBe('v1.36.4\n');
    expect(run(['value', '-', 'absent']).status).toBe(1);
  });
});
