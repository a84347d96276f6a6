/**
 * The error taxonomy every layer uses; the saga, the error policy and the decommission saga route on
 * the class, never on message text:
 * - InputError: the tenant's spec (or a conflicting object) must change; retried slowly.
 * - DependencyError: something the operator needs is unavailable (NATS, the API); retried with backoff.
 * - ShutdownError: the operator is stopping (or handing the tenant over); nothing was started.
 * Any other error is treated as a DependencyError.
 * `reason` comes from the one catalogue (api/reasons.ts); `message` is safe to show (never secrets).
 */
import { Reason } from './api/reasons.ts';

export abstract class StepError extends Error {
  readonly reason: Reason;
  constructor(reason: Reason, message: string, options?: ErrorOptions) {
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

/** Thrown when the operator is shutting down: nothing was started. */
export class ShutdownError extends Error {
  override readonly name = 'ShutdownError';
}


export const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** What a failure means for a condition: its reason, a message safe to show, and whether a human must act. */
export interface Problem {
  readonly reason: Reason;
  readonly message: string;
  readonly needsUser: boolean;
}

/** The one reading of any error: step errors keep their reason, anything else gets `fallback`. */
export function problemOf(err: unknown, fallback: Reason = Reason.StepFailed): Problem {
  const reason = err instanceof StepError ? err.reason : fallback;
  return { reason, message: messageOf(err), needsUser: err instanceof InputError };
}
