import { describe, expect, it } from 'vitest';
import type { ValuesSourceEvent, ValuesSourceHandler, ValuesSourceObject } from '../adapters/values-sources.ts';
import { ValuesFromWatch } from './values-from-watch.ts';

/** The caches' events, delivered by hand (e2e/values-from.test.ts runs the real watch). */
function eventSource(): { on: (h: ValuesSourceHandler) => void; start: () => Promise<void>; stop: () => Promise<void>; emit: (e: ValuesSourceEvent, s: ValuesSourceObject) => void } {
  const handlers: ValuesSourceHandler[] = [];
  return {
    on: (h) => handlers.push(h),
    start: () => Promise.resolve(),
    stop: () => Promise.resolve(),
    emit: (event, source) => {
      for (const h of handlers) h(event, source);
    },
  };
}

const tenant = (name: string, code: string, valuesFrom: Record<string, unknown[]>) => ({ metadata: { name }, spec: { capsuleCode: code, valuesFrom } });
const secret = (namespace: string, name: string, data: Record<string, string>): ValuesSourceObject => ({ kind: 'Secret', namespace, name, labels: {}, data, resourceVersion: '1' });

describe('valuesFrom wake-ups', () => {
  it('wakes exactly the tenants whose spec names the object, when its data changes, appears or goes', () => {
    const events = eventSource();
    const watch = new ValuesFromWatch(events, 'eva-system');
    const woken: string[] = [];
    watch.subscribe((name) => woken.push(name));
    watch.noteTenant(tenant('a', 'AAAAAA', { 'orbit-crm': [{ kind: 'Secret', name: 'sso' }, { kind: 'ConfigMap', name: 'shared', namespace: 'Operator' }] }));
    watch.noteTenant(tenant('b', 'BBBBBB', { 'orbit-crm': [{ kind: 'Secret', name: 'sso' }], 'orbit-itsm': [{ kind: 'ConfigMap', name: 'shared', namespace: 'Operator' }] }));

    events.emit('add', secret('eva-tenant-aaaaaa', 'sso', { k: 'v1' }));
    expect(woken).toEqual(['a']);
    events.emit('update', secret('eva-tenant-aaaaaa', 'sso', { k: 'v1' }));
    expect(woken).toEqual(['a']);
    events.emit('update', secret('eva-tenant-aaaaaa', 'sso', { k: 'v2' }));
    expect(woken).toEqual(['a', 'a']);
    events.emit('add', { ...secret('eva-system', 'shared', {}), kind: 'ConfigMap' });
    expect(woken.slice(2).sort()).toEqual(['a', 'b']);
    events.emit('delete', secret('eva-tenant-bbbbbb', 'sso', {}));
    expect(woken.slice(4)).toEqual(['b']);
    // Same name, another kind or namespace: nobody.
    events.emit('add', secret('eva-system', 'sso', {}));
    events.emit('add', { ...secret('eva-tenant-aaaaaa', 'sso', {}), kind: 'ConfigMap' });
    expect(woken).toHaveLength(5);
  });

  it('follows spec changes and deleted tenants', () => {
    const watch = new ValuesFromWatch(eventSource(), 'eva-system');
    watch.noteTenant(tenant('a', 'AAAAAA', { 'orbit-crm': [{ kind: 'Secret', name: 'one' }] }));
    expect(watch.tenantsUsing('Secret', 'eva-tenant-aaaaaa', 'one')).toEqual(['a']);
    watch.noteTenant(tenant('a', 'AAAAAA', { 'orbit-crm': [{ kind: 'Secret', name: 'two' }] }));
    expect(watch.tenantsUsing('Secret', 'eva-tenant-aaaaaa', 'one')).toEqual([]);
    expect(watch.tenantsUsing('Secret', 'eva-tenant-aaaaaa', 'two')).toEqual(['a']);
    watch.forgetTenant('a');
    expect(watch.tenantsUsing('Secret', 'eva-tenant-aaaaaa', 'two')).toEqual([]);
  });
});
