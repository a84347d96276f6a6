import { describe, expect, it } from 'vitest';
import { credentialsSecretName } from './credentials.ts';

describe('credentials', () => {
  it('names the credentials Secret after the code', () => {
    expect(credentialsSecretName('ACMECO')).toBe('eva-acmeco-credentials');
  });
});
