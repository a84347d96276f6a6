import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { askPrometheus, podFigures, queryAnswer } from './observed.ts';

describe('a Prometheus answer as one number', () => {
  it.each<[string, unknown, unknown]>([
    ['a scalar', { status: 'success', data: { resultType: 'scalar', result: [1, '0.25'] } }, { value: 0.25 }],
    ['a one-sample vector', { status: 'success', data: { resultType: 'vector', result: [{ metric: {}, value: [1, '3'] }] } }, { value: 3 }],
    ['NaN stays NaN (the gate calls it Unknown)', { status: 'success', data: { resultType: 'scalar', result: [1, 'NaN'] } }, { value: Number.NaN }],
    ['an empty vector', { status: 'success', data: { resultType: 'vector', result: [] } }, { error: 'the query gave 0 series, not one number' }],
    ['two series', { status: 'success', data: { resultType: 'vector', result: [{ value: [1, '1'] }, { value: [1, '2'] }] } }, { error: 'the query gave 2 series, not one number' }],
    ['a matrix', { status: 'success', data: { resultType: 'matrix', result: [] } }, { error: 'the query gave a matrix, not one number' }],
    ['an error', { status: 'error', error: 'parse error at char 4' }, { error: 'parse error at char 4' }],
    ['not JSON of Prometheus', null, { error: 'Prometheus did not answer with success' }],
  ])('%s', (_label, body, expected) => {
    expect(queryAnswer(body)).toEqual(expected);
  });
});

describe('asking Prometheus', () => {
  it('posts the query and reads the answer; a server that is gone is an error, never a number', async () => {
    let asked = '';
    const server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        asked = `${request.method ?? ''} ${request.url ?? ''} ${new URLSearchParams(body).get('query') ?? ''}`;
        response.setHeader('content-type', 'application/json');
        response.end(JSON.stringify({ status: 'success', data: { resultType: 'scalar', result: [1, '0.5'] } }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${String((server.address() as AddressInfo).port)}`;
    expect(await askPrometheus(url, 'sum(up)')).toEqual({ value: 0.5 });
    expect(asked).toBe('POST /api/v1/query sum(up)');
    await new Promise((resolve) => server.close(resolve));
    expect(await askPrometheus(url, 'sum(up)')).toHaveProperty('error');
  });
});

describe('pod figures', () => {
  const pod = (created: string, restarts: number, ready: boolean): V1Pod => ({
    metadata: { creationTimestamp: new Date(created) },
    status: { containerStatuses: [{ name: 'c', image: 'i', imageID: '', ready, restartCount: restarts }], conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
  });

  it('counts restarts of pods started since the move only, and every pod not Ready', () => {
    const since = new Date('2030-01-01T00:10:00Z');
    expect(podFigures([pod('2030-01-01T00:00:00Z', 9, true), pod('2030-01-01T00:11:00Z', 2, false), pod('2030-01-01T00:12:00Z', 1, true)], since)).toEqual({ restarts: 3, unready: 1 });
  });

  it('leaves out pods being deleted (a rolling update\'s old pods, not Ready in their grace period)', () => {
    const since = new Date('2030-01-01T00:10:00Z');
    const staying = pod('2030-01-01T00:11:00Z', 4, false);
    const leaving = pod('2030-01-01T00:11:00Z', 4, false);
    leaving.metadata = { creationTimestamp: new Date('2030-01-01T00:11:00Z'), deletionTimestamp: new Date('2030-01-01T00:13:00Z') };
    expect(podFigures([leaving, pod('2030-01-01T00:12:00Z', 0, true)], since)).toEqual({ restarts: 0, unready: 0 });
    // The control: the same pod, not being deleted, counts.
    expect(podFigures([staying], since)).toEqual({ restarts: 4, unready: 1 });
  });
});
