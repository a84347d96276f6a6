/**
 * The version kubectl-eva was built as: package.json's, put in by the bundler (scripts/build-cli.ts
 * defines KUBECTL_EVA_VERSION), never read at run time (the executable has no package.json beside it).
 */
declare const KUBECTL_EVA_VERSION: string | undefined;

/** Run from the sources, nothing was built: it says so rather than guess. */
export const UNBUILT = 'unbuilt (run from the sources)';

export const builtVersion = (): string => (typeof KUBECTL_EVA_VERSION === 'string' ? KUBECTL_EVA_VERSION : UNBUILT);
