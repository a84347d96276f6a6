import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { CRD_FILE, renderCrdYaml } from './crd.ts';

describe('CRD generation', () => {
  it('crds/ matches the TypeScript schema (run `npm run crd:generate` after changing src/api)', () => {
    const committed = readFileSync(new URL(`../../${CRD_FILE}`, import.meta.url), 'utf8');
    expect(committed).toBe(renderCrdYaml());
  });

  it('emits only structural-schema keywords', () => {
    const yaml = renderCrdYaml();
    for (const forbidden of ['const:', 'patternProperties', '$id', 'allOf']) {
      expect(yaml).not.toContain(forbidden);
    }
  });

  it('uses anyOf only to refuse unknown keys (branches of required and maxProperties only)', () => {
    const branches: object[] = [];
    const walk = (node: unknown): void => {
      if (typeof node !== 'object' || node === null) return;
      if (Array.isArray(node)) { node.forEach(walk); return; }
      const anyOf = (node as { anyOf?: object[] }).anyOf;
      if (anyOf !== undefined) branches.push(...anyOf);
      Object.values(node).forEach(walk);
    };
    walk(parse(renderCrdYaml()));
    expect(branches.length).toBeGreaterThan(16);
    expect(new Set(branches.flatMap((b) => Object.keys(b)))).toEqual(new Set(['required', 'maxProperties']));
  });
});
