import { describe, expect, it } from 'vitest';

describe('runtime', () => {
  it('runs on Node.js 24 LTS (the npm `node` package), not the machine Node 20', () => {
    const major = Number(process.versions.node.split('.')[0]);
    expect(major).toBe(24);
  });
});
