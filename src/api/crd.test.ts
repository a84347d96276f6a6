import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { renderAllCrds } from './crd.ts';

describe('CRD generation', () => {
  it.each([...renderAllCrds()])('%s matches the TypeScript schema, in crds/ and the chart (run `npm run crd:generate` after changing src/api)', (file, yaml) => {
    for (const where of [file, `charts/eva-operator/${file}`]) expect(readFileSync(new URL(`../../${where}`, import.meta.url), 'utf8'), where).toBe(yaml);
  });

  it.each([...renderAllCrds()])('%s emits only structural-schema keywords', (_file, yaml) => {
    for (const forbidden of ['anyOf', 'const:', 'patternProperties', '$id', 'allOf']) {
      expect(yaml).not.toContain(forbidden);
    }
  });
});
