import { beforeAll, expect, it } from 'vitest';

beforeAll(() => {
  throw new Error('a tool this file needs is missing (on purpose)');
});
it('never runs', () => { expect(true).toBe(true); });
it('never runs either', () => { expect(true).toBe(true); });
