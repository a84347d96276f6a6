/** The preflight's output: an aligned table and, after it, how to fix each failure; or the results as JSON. */
import type { CheckResult } from './result.ts';

export type OutputFormat = 'table' | 'json';
export const OUTPUT_FORMATS: readonly OutputFormat[] = ['table', 'json'];

export function renderTable(results: readonly CheckResult[]): string {
  const rows = [['CHECK', 'RESULT', 'DETAIL'], ...results.map((r) => [r.check, r.result.toUpperCase(), r.detail])];
  const widths = [0, 1].map((column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  const lines = rows.map((row) => `${(row[0] ?? '').padEnd(widths[0] ?? 0)}  ${(row[1] ?? '').padEnd(widths[1] ?? 0)}  ${row[2] ?? ''}`);
  const fixes = results.flatMap((r) => (r.result === 'fail' ? [`fix: ${r.check}: ${r.fix}`] : []));
  const count = (result: CheckResult['result']): number => results.filter((r) => r.result === result).length;
  const summary = `${String(count('fail'))} failed, ${String(count('warn'))} warning(s), ${String(count('ok'))} ok`;
  return [...lines, '', ...(fixes.length > 0 ? [...fixes, ''] : []), summary, ''].join('\n');
}

export const renderJson = (results: readonly CheckResult[]): string => `${JSON.stringify(results, null, 2)}\n`;

export const render = (results: readonly CheckResult[], format: OutputFormat): string => (format === 'json' ? renderJson(results) : renderTable(results));
