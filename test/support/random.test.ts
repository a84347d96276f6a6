import { describe, expect, it } from 'vitest';
import { CAPSULE_CODE_PATTERN } from '../../src/api/constants.ts';
import { capsuleCodes } from './random.ts';

describe('capsuleCodes', () => {
  it('gives two files started at once valid codes that never meet', () => {
    const first = capsuleCodes('X');
    const second = capsuleCodes('Y');
    const a = Array.from({ length: 700 }, () => first());
    const b = Array.from({ length: 700 }, () => second());
    for (const code of [...a, ...b]) expect(code).toMatch(new RegExp(CAPSULE_CODE_PATTERN));
    expect(new Set(a).size).toBe(a.length);
    expect(a.filter((code) => b.includes(code))).toEqual([]);
    // The control: the counter's letters repeat from file to file; only the letters in front differ.
    expect(b.map((code) => code.slice(3))).toEqual(a.map((code) => code.slice(3)));
  });
});
