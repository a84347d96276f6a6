/** Reading the real operator's /metrics (its port is in its "eva-operator started" log line). */
import type { OperatorProcess } from './operator.ts';

export function metricsPort(op: OperatorProcess): number {
  const line = op.logs().split('\n').find((l) => l.includes('"msg":"eva-operator started"'));
  const port = /"metricsPort":(\d+)/.exec(line ?? '')?.[1];
  if (port === undefined) throw new Error(`no metricsPort in the operator log:\n${op.logs().slice(-2000)}`);
  return Number(port);
}

export async function scrape(op: OperatorProcess): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${String(metricsPort(op))}/metrics`);
  return response.text();
}

/** Sum of a metric's samples whose label text contains `labels` (all samples when empty). */
export function metricSum(text: string, name: string, labels = ''): number {
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
    .filter((l) => l.includes(labels))
    .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
}
