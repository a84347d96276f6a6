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
