/**
 * Fault injection on real parts (Flux's storage/failing.go idea): a proxy that makes the `at`-th call
 * among chosen methods throw before it runs, as a pod killed at that line would.
 */
export class Crash extends Error {
  override readonly name = 'Crash';
}

/** Wraps chosen methods so that the `at`-th call among all of them throws before it runs. */
export function crashing<T extends object>(target: T, methods: readonly (keyof T)[], plan: { at: number; calls: number }): T {
  return new Proxy(target, {
    get(obj, prop, receiver) {
      const value: unknown = Reflect.get(obj, prop, receiver);
      if (typeof value !== 'function' || !methods.includes(prop as keyof T)) return value;
      return (...args: unknown[]) => {
        plan.calls += 1;
        if (plan.calls === plan.at) throw new Crash(`crash before ${String(prop)}`);
        return (value as (...a: unknown[]) => unknown).apply(obj, args);
      };
    },
  });
}

/** The object with some of its properties replaced (methods still run on the object itself). */
export function withParts<T extends object>(target: T, parts: Record<string | symbol, unknown>): T {
  return new Proxy(target, { get: (obj, prop, receiver): unknown => (prop in parts ? parts[prop] : Reflect.get(obj, prop, receiver)) });
}
