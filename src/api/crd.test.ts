import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { CRD_FILE, renderCrdYaml } from './crd.ts';

describe('CRD generation', () => {
  it('crds/ matches the TypeScript schema (run `npm run crd:generate` after changing src/api)', () => {
    const committed = readFileSync(new URL(`../../${CRD_FILE}`, import.meta.url), 'utf8');
    expect(committed).toBe(renderCrdYaml());
  });

  it('emits only structural-schema keywords', () => {
    const yaml = renderCrdYaml();
    for (const forbidden of ['anyOf', 'const:', 'patternProperties', '$id', 'allOf']) {
      expect(yaml).not.toContain(forbidden);
    }
  });
});
