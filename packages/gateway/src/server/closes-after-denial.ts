import type { IncomingMessage } from 'node:http';
import { closesAfterDenial } from 'sluice/http';
import { expectsContinue } from '../proxy/expects-continue.js';
import { DENIED_BODY_DRAIN_BYTES, drainBody } from './drain-body.js';

/**
 * Whether the denial of a request whose body is not read yet must close the connection: a body the client holds
 * back for `100 Continue`, a declared one over the drain bound, or a chunked one that runs past it while it is
 * read and dropped here: a promise only for a chunked body, which is read first.
 */
export function closesAfterDenialOf(req: IncomingMessage, maxBodyBytes: number): boolean | Promise<boolean> {
  const limit = Math.min(maxBodyBytes, DENIED_BODY_DRAIN_BYTES);
  const declared = req.headers['content-length'];
  if (expectsContinue(req)) return declared !== '0';
  // Only a chunked body is read here, so only it makes a promise: a request without a body is answered at once.
  if (req.headers['transfer-encoding'] !== undefined) return drainBody(req, limit).then(notDrained);
  return closesAfterDenial(req.headers, limit);
}

function notDrained(drained: boolean): boolean {
  return !drained;
}
