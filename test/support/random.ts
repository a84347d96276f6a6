/** Small seeded PRNG (mulberry32) so jittered or randomized test runs are reproducible. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Four uppercase letters that differ from run to run: capsule codes must be six letters, A to Z. */
export function runLetters(): string {
  return Date.now().toString(36).slice(-4).toUpperCase().replace(/[^A-Z]/g, 'Q').padEnd(4, 'Q');
}

/**
 * Capsule codes for one test file: its own first letter, two letters of the run, then a counter (three
 * letters). Files that run at once start in the same second and so share their run letters: only the
 * file's letter keeps their tenants (and namespaces) apart.
 */
export function capsuleCodes(fileLetter: string): () => string {
  const run = runLetters().slice(0, 2);
  let counter = 0;
  return () => {
    counter += 1;
    const tail = Array.from({ length: 3 }, (_, i) => String.fromCharCode(65 + (Math.floor(counter / 26 ** (2 - i)) % 26))).join('');
    return `${fileLetter}${run}${tail}`;
  };
}
