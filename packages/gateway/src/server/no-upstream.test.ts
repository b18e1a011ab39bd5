import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import type { Runtime } from '../admission/runtime.js';
import { answerWithoutUpstream } from './no-upstream.js';

/** A response that records what was written. */
function response() {
  const seen: { status?: number; headers?: Record<string, unknown>; body?: string } = {};
  const res = {
    headersSent: false,
    writeHead(status: number, headers: Record<string, unknown>) {
      seen.status = status;
      seen.headers = headers;
      return this;
    },
    end(body: string) {
      seen.body = body;
    },
  };
  return { res: res as unknown as ServerResponse, seen };
}

describe('answerWithoutUpstream', () => {
  it('answers the no_upstream problem, with the request id, when there is no upstream', () => {
    const { res, seen } = response();
    expect(answerWithoutUpstream({ proxy: undefined }, res, '/a?b=1', 'req-1', 'x-request-id')).toBe(true);
    expect(seen.status).toBe(502);
    expect(seen.headers).toMatchObject({
      'x-request-id': 'req-1',
      'content-type': 'application/problem+json',
      'cache-control': 'no-store',
    });
    expect(JSON.parse(seen.body as string)).toMatchObject({ code: 'no_upstream', instance: '/a' });
  });

  it('leaves a request to admission when there is an upstream', () => {
    const { res, seen } = response();
    const rt = { proxy: {} } as unknown as Pick<Runtime, 'proxy'>;
    expect(answerWithoutUpstream(rt, res, '/a', 'req-1', 'x-request-id')).toBe(false);
    expect(seen).toEqual({});
  });
});
