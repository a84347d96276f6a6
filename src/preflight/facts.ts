/**
 * What the preflight's observer (observe.ts) saw, as plain data: the decide functions (kubernetes.ts,
 * nats.ts, ingress.ts, tls.ts) turn these into results without any I/O, so they are tested as tables.
 */

/** A probe's outcome: what it saw, or why it could not look (a check that cannot run fails, never passes). */
export type Seen<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: string };

export const seen = <T>(value: T): Seen<T> => ({ ok: true, value });
export const unseen = (error: string): Seen<never> => ({ ok: false, error });

export interface KubernetesFacts {
  /** The API server's gitVersion, e.g. v1.36.4. */
  readonly gitVersion: string;
  /** The operator chart's kubeVersion range, e.g. >=1.30.0-0. */
  readonly floor: string;
}

/** Which of the admission policy kinds admissionregistration.k8s.io/v1 serves. */
export type AdmissionFacts = readonly string[];

export interface IngressClassFact {
  readonly name: string;
  readonly controller: string;
  /** Annotated ingressclass.kubernetes.io/is-default-class=true. */
  readonly isDefault: boolean;
}

/** A namespace the NetworkPolicy's ingress exception selects, and a pod running there (if any). */
export interface IngressNamespaceFact {
  readonly name: string;
  readonly runningPod: string | undefined;
}

export type TlsFacts =
  | { readonly mode: 'none' }
  /** The ClusterIssuer, or undefined when there is none (or no cert-manager). */
  | { readonly mode: 'issuer'; readonly name: string; readonly issuer: { readonly ready: string; readonly message: string } | undefined }
  /** The Secret's type and which of the keys the operator copies it has; undefined when absent. */
  | { readonly mode: 'secret'; readonly ref: string; readonly secret: { readonly type: string; readonly hasCrt: boolean; readonly hasKey: boolean } | undefined };

export interface NatsServerFacts {
  readonly version: string;
  readonly trustedOperators: readonly string[];
  readonly jetStreamMaxStorage: number | undefined;
}

/** How far the NATS probe got, in order: each state says what the next step could not do. */
export type NatsFacts =
  | { readonly state: 'not-configured'; readonly missing: readonly string[] }
  | { readonly state: 'unreachable'; readonly target: string; readonly error: string }
  | { readonly state: 'rejected'; readonly target: string; readonly error: string }
  /** Connected, but no answer on the system account's subjects: not operator mode, or not the system user. */
  | { readonly state: 'no-system-answer'; readonly target: string; readonly error: string }
  | { readonly state: 'answered'; readonly target: string; readonly server: NatsServerFacts; readonly resolver: Seen<{ readonly accounts: number }> };

export interface Observations {
  readonly kubernetes: Seen<KubernetesFacts>;
  readonly admission: Seen<AdmissionFacts>;
  readonly ingressClasses: Seen<readonly IngressClassFact[]>;
  /** Undefined when the NetworkPolicy is off (nothing to match). */
  readonly ingressNamespaces: Seen<readonly IngressNamespaceFact[]> | undefined;
  readonly tls: Seen<TlsFacts>;
  readonly nats: NatsFacts;
}
