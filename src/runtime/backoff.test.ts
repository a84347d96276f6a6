import { IterableBackoff } from 'cockatiel';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DEFAULT_BACKOFF_CAP_MS, KeyedBackoff } from './backoff.ts';
import { seededRandom } from '../../test/support/random.ts';


function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function sequence(backoff: KeyedBackoff, key: string, n: number): number[] {
  return Array.from({ length: n }, () => backoff.next(key));
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('KeyedBackoff', () => {
  it('scales the first delay from the 200 ms default base', () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    const first = new KeyedBackoff().next('a');
    // cockatiel's decorrelated jitter at attempt 0 with r = 0.5: 2^r * tanh(sqrt(4r)) / 1.4 * base.
    expect(first).toBeCloseTo(((Math.SQRT2 * Math.tanh(Math.SQRT2)) / 1.4) * 200, 9);
    // Independent of the formula: the base is a linear scale.
    expect(new KeyedBackoff({ baseMs: 400 }).next('a')).toBeCloseTo(first * 2, 9);
    expect(new KeyedBackoff({ baseMs: 100 }).next('a')).toBeCloseTo(first / 2, 9);
  });

  it('grows about twofold per attempt for a fixed jitter draw', () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    const delays = sequence(new KeyedBackoff({ capMs: 1e12 }), 'a', 12);
    // cockatiel smooths the first retry (tanh term): x1.22 at first, then converging on x2.
    expect(delays[1]! / delays[0]!).toBeGreaterThan(1.1);
    for (let i = 2; i < delays.length; i++) {
      const ratio = delays[i]! / delays[i - 1]!;
      expect(ratio).toBeGreaterThan(1.8);
      expect(ratio).toBeLessThan(2.1);
    }
    expect(delays[11]! / delays[0]!).toBeGreaterThan(1_000);
  });

  it('grows exponentially in the median across keys under real jitter', () => {
    vi.spyOn(Math, 'random').mockImplementation(seededRandom(7));
    const backoff = new KeyedBackoff({ capMs: 1e12 });
    const byAttempt: number[][] = Array.from({ length: 8 }, () => []);
    for (let k = 0; k < 400; k++) {
      sequence(backoff, `key-${k}`, 8).forEach((d, attempt) => byAttempt[attempt]!.push(d));
    }
    const medians = byAttempt.map(median);
    for (let i = 1; i < medians.length; i++) {
      expect(medians[i]! / medians[i - 1]!).toBeGreaterThan(i === 1 ? 1.1 : 1.5);
      expect(medians[i]! / medians[i - 1]!).toBeLessThan(2.6);
    }
    expect(medians[7]! / medians[0]!).toBeGreaterThan(40);
    // Decorrelated jitter: single steps may shrink, but time waited in total always grows.
    for (let k = 0; k < 50; k++) {
      const totals = sequence(backoff, `total-${k}`, 10).reduce<number[]>((acc, d) => [...acc, (acc.at(-1) ?? 0) + d], []);
      for (let i = 1; i < totals.length; i++) expect(totals[i]!).toBeGreaterThanOrEqual(totals[i - 1]!);
      expect(totals.at(-1)!).toBeGreaterThan(200 * 2 ** 7);
    }
  });

  it('jitters: first delays spread over their range instead of repeating', () => {
    vi.spyOn(Math, 'random').mockImplementation(seededRandom(11));
    const backoff = new KeyedBackoff();
    const firsts = Array.from({ length: 300 }, (_, i) => backoff.next(`key-${i}`));
    expect(new Set(firsts).size).toBe(300);
    for (const d of firsts) {
      expect(d).toBeGreaterThanOrEqual(0);
      expect(d).toBeLessThan(276); // 2 * tanh(2) / 1.4 * 200 ≈ 275.4
    }
    expect(Math.min(...firsts)).toBeLessThan(60);
    expect(Math.max(...firsts)).toBeGreaterThan(220);
    // Two keys failing in lockstep still get different retry times.
    expect(sequence(backoff, 'x', 5)).not.toEqual(sequence(backoff, 'y', 5));
  });

  it('caps every delay at 60 s by default and reaches the cap', () => {
    vi.spyOn(Math, 'random').mockImplementation(seededRandom(3));
    const delays = sequence(new KeyedBackoff(), 'a', 40);
    expect(Math.max(...delays)).toBe(DEFAULT_BACKOFF_CAP_MS);
    for (const d of delays) expect(d).toBeLessThanOrEqual(60_000);
    expect(delays.slice(-10)).toEqual(Array<number>(10).fill(60_000));
  });

  it('honours a custom cap', () => {
    vi.spyOn(Math, 'random').mockImplementation(seededRandom(5));
    const delays = sequence(new KeyedBackoff({ baseMs: 50, capMs: 1_000 }), 'a', 20);
    expect(Math.max(...delays)).toBe(1_000);
    expect(delays[0]!).toBeLessThan(100);
  });

  it('counts retries per key and resets a key on forget', () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    const backoff = new KeyedBackoff();
    const first = backoff.next('a');
    backoff.next('a');
    const third = backoff.next('a');
    backoff.next('b');
    expect(backoff.retries('a')).toBe(3);
    expect(backoff.retries('b')).toBe(1);
    expect(backoff.retries('never')).toBe(0);
    expect(third).toBeGreaterThan(first * 2);

    backoff.forget('a');
    expect(backoff.retries('a')).toBe(0);
    expect(backoff.retries('b')).toBe(1);
    expect(backoff.size).toBe(1);
    expect(backoff.next('a')).toBe(first);
    expect(backoff.retries('a')).toBe(1);
  });

  it('accepts an injected cockatiel factory and still clamps its output', () => {
    const backoff = new KeyedBackoff({ factory: new IterableBackoff([100, 5_000, -3]), capMs: 1_000 });
    expect(sequence(backoff, 'a', 4)).toEqual([100, 1_000, 0, 0]);
    expect(backoff.next('b')).toBe(100);
  });
});
