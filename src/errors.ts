/**
 * Typed step failures. The saga and the error policy route on the class, never on message text:
 * - InputError: the tenant's spec (or a conflicting object) must change; retried slowly.
 * - DependencyError: something the operator needs is unavailable (NATS, the API); retried with backoff.
 * Any other error is treated as a DependencyError.
 * `reason` is a CamelCase condition reason; `message` is safe to show (never contains secrets).
 */
export abstract class StepError extends Error {
  readonly reason: string;
  constructor(reason: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.reason = reason;
  }
}

export class InputError extends StepError {
  override readonly name = 'InputError';
}

export class DependencyError extends StepError {
  override readonly name = 'DependencyError';
}

export function asStepError(err: unknown, fallbackReason: string): StepError {
  if (err instanceof StepError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new DependencyError(fallbackReason, message, { cause: err });
}
