import type { IncomingMessage } from 'node:http';

/** Whether the client waits for `100 Continue` before it sends the body (`Expect: 100-continue`). */
export function expectsContinue(req: IncomingMessage): boolean {
  const e = req.headers.expect;
  return e !== undefined && e.toLowerCase() === '100-continue';
}
