import { describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { createLogger, redactSecrets, tenantLogger } from './log.ts';

function capture(): { lines: () => Record<string, unknown>[]; stream: Writable } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  return { stream, lines: () => chunks.join('').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('logging', () => {
  it('puts the tenant code on every tenant line', () => {
    const out = capture();
    const log = tenantLogger(createLogger('info', out.stream), 'ABCDEF', 'abcdef');
    log.info({ step: 'namespace' }, 'ensured');
    expect(out.lines()[0]).toMatchObject({ tenant: 'ABCDEF', evatenant: 'abcdef', step: 'namespace', msg: 'ensured', level: 'info' });
  });

  it('redacts secret keys at any depth', () => {
    const out = capture();
    createLogger('info', out.stream).info({ nats: { password: 'hunter2' }, token: 'tok', values: { db: { secret: 's3' } } }, 'x');
    const text = JSON.stringify(out.lines()[0]);
    for (const secret of ['hunter2', 'tok"', 's3']) expect(text).not.toContain(secret);
  });

  it('redacts secret-shaped values inside strings and errors', () => {
    const out = capture();
    const log = createLogger('info', out.stream);
    log.error({ err: new Error('dial nats://svc:pa55word@10.0.0.1:4222 failed') }, 'helm said password=abc123 and Bearer eyJabc.def');
    const text = JSON.stringify(out.lines()[0]);
    expect(text).not.toContain('pa55word');
    expect(text).not.toContain('abc123');
    expect(text).not.toContain('eyJabc');
    expect(text).toContain('[REDACTED]');
  });

  it.each([
    ['nats://user:pw@host:4222', 'nats://[REDACTED]@host:4222'],
    ['token: "xyz"', 'token: "[REDACTED]"'],
    ['nothing secret here', 'nothing secret here'],
  ])('redactSecrets(%s)', (input, expected) => {
    expect(redactSecrets(input)).toBe(expected);
  });
});
