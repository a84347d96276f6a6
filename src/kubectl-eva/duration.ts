/** Elapsed times as kubectl prints ages: two units at most, e.g. 42s, 4m12s, 3h5m, 2d7h. */

/** Milliseconds from `since` (an RFC 3339 time) to `now`; undefined when `since` is absent or not a time. */
export function millisSince(since: string | undefined, now: Date): number | undefined {
  if (since === undefined) return undefined;
  const at = Date.parse(since);
  return Number.isNaN(at) ? undefined : now.getTime() - at;
}

/** A span as kubectl shows it; a span in the future (clock skew) shows as 0s. */
export function formatElapsed(millis: number): string {
  const total = Math.max(0, Math.floor(millis / 1000));
  const [days, hours, minutes, seconds] = [Math.floor(total / 86_400), Math.floor(total / 3600) % 24, Math.floor(total / 60) % 60, total % 60];
  if (days > 0) return hours > 0 ? `${String(days)}d${String(hours)}h` : `${String(days)}d`;
  if (hours > 0) return minutes > 0 ? `${String(hours)}h${String(minutes)}m` : `${String(hours)}h`;
  if (minutes > 0) return seconds > 0 ? `${String(minutes)}m${String(seconds)}s` : `${String(minutes)}m`;
  return `${String(seconds)}s`;
}

/** The age of `since` at `now`, or `-` when there is no time to measure from. */
export function ageOf(since: string | undefined, now: Date): string {
  const millis = millisSince(since, now);
  return millis === undefined ? '-' : formatElapsed(millis);
}
