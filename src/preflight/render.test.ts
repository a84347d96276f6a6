import { describe, expect, it } from 'vitest';
import { renderJson, renderTable } from './render.ts';
import { type CheckResult, exitCodeOf, fail, ok, warn } from './result.ts';

const results: CheckResult[] = [
  ok('kubernetes-version', 'v1.36.4 satisfies >=1.30.0-0'),
  warn('tls', 'no TLS'),
  fail('ingress-class', 'IngressClass eva-lb does not exist', 'set ingressClass'),
];

describe('the preflight output', () => {
  it('an aligned table, then a fix line per failure, then the counts', () => {
    expect(renderTable(results)).toBe(
      [
        'CHECK               RESULT  DETAIL',
        'kubernetes-version  OK      v1.36.4 satisfies >=1.30.0-0',
        'tls                 WARN    no TLS',
        'ingress-class       FAIL    IngressClass eva-lb does not exist',
        '',
        'fix: ingress-class: set ingressClass',
        '',
        '1 failed, 1 warning(s), 1 ok',
        '',
      ].join('\n'),
    );
  });

  it('JSON: the array of results, fixes included', () => {
    expect(JSON.parse(renderJson(results))).toEqual([
      { check: 'kubernetes-version', result: 'ok', detail: 'v1.36.4 satisfies >=1.30.0-0' },
      { check: 'tls', result: 'warn', detail: 'no TLS' },
      { check: 'ingress-class', result: 'fail', detail: 'IngressClass eva-lb does not exist', fix: 'set ingressClass' },
    ]);
  });

  it('exits 1 on any failure, 0 with warnings only', () => {
    expect(exitCodeOf(results)).toBe(1);
    expect(exitCodeOf(results.slice(0, 2))).toBe(0);
  });
});
