import { describe, expect, it } from 'vitest';
import { seen, unseen } from './facts.ts';
import { decideIngressClass, decideIngressException } from './ingress-checks.ts';

const traefik = { name: 'traefik', controller: 'traefik.io/ingress-controller', isDefault: false };
const nginx = { name: 'nginx', controller: 'k8s.io/ingress-nginx', isDefault: true };

describe('decideIngressClass', () => {
  it('the configured class exists', () => {
    expect(decideIngressClass('traefik', seen([traefik, nginx]))).toEqual({ check: 'ingress-class', result: 'ok', detail: 'IngressClass traefik exists (controller traefik.io/ingress-controller)' });
  });

  it('a configured class that does not exist fails, naming the classes there are', () => {
    expect(decideIngressClass('eva-lb', seen([traefik, nginx]))).toEqual({
      check: 'ingress-class',
      result: 'fail',
      detail: 'IngressClass eva-lb does not exist (classes: traefik, nginx)',
      fix: 'set ingressClass to one of: traefik, nginx (or install a controller serving eva-lb)',
    });
    expect(decideIngressClass('eva-lb', seen([]))).toMatchObject({ result: 'fail', fix: 'install an ingress controller that serves class eva-lb' });
  });

  it('none configured: ok with one default class, a warning without one', () => {
    expect(decideIngressClass(undefined, seen([traefik, nginx]))).toMatchObject({ result: 'ok', detail: 'none set: tenant Ingresses get the default class nginx' });
    expect(decideIngressClass(undefined, seen([traefik])).result).toBe('warn');
    expect(decideIngressClass(undefined, seen([nginx, { ...traefik, isDefault: true }])).result).toBe('warn');
  });

  it('fails when the classes could not be listed', () => {
    expect(decideIngressClass('traefik', unseen('the API server answered 403: forbidden')).result).toBe('fail');
    expect(decideIngressClass(undefined, unseen('timeout')).result).toBe('fail');
  });
});

describe('decideIngressException', () => {
  const selector = { 'kubernetes.io/metadata.name': 'ingress-nginx' };
  const fix = 'set networkPolicy.ingressNamespaces=kubernetes.io/metadata.name=<the namespace of your ingress controller>';

  it('a selected namespace with a running pod passes', () => {
    expect(decideIngressException(selector, seen([{ name: 'ingress-nginx', runningPod: 'controller-abc' }]))).toMatchObject({
      result: 'ok',
      detail: 'kubernetes.io/metadata.name=ingress-nginx selects ingress-nginx (pod controller-abc running)',
    });
  });

  it('no namespace matches: fails with the chart value to set', () => {
    expect(decideIngressException(selector, seen([]))).toEqual({
      check: 'ingress-exception',
      result: 'fail',
      detail: 'no namespace matches networkPolicy.ingressNamespaces kubernetes.io/metadata.name=ingress-nginx: tenant modules would be unreachable from the ingress controller',
      fix,
    });
  });

  it('namespaces match but nothing runs there: fails the same way', () => {
    expect(decideIngressException(selector, seen([{ name: 'ingress-nginx', runningPod: undefined }]))).toMatchObject({ result: 'fail', fix });
  });

  it('the NetworkPolicy off is a warning; a listing that failed is a failure', () => {
    expect(decideIngressException(selector, undefined).result).toBe('warn');
    expect(decideIngressException(selector, unseen('timeout')).result).toBe('fail');
  });
});
