/** Aligned columns, as kubectl prints lists: a header row, two spaces between columns, the last column unpadded. */
export function columns(rows: readonly (readonly string[])[], indent = ''): string[] {
  const widths = rows.reduce<number[]>((w, row) => row.map((cell, i) => Math.max(w[i] ?? 0, cell.length)), []);
  return rows.map((row) => `${indent}${row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join('  ')}`.trimEnd());
}
