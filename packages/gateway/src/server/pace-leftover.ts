import type { IncomingMessage } from 'node:http';
import { BodyDeadline, type BodyPace, type DeadlineTimer, REAL_TIMER } from '../proxy/body-deadline.js';

/**
 * Holds the rest of a request body that was answered without being forwarded to the pace a forwarded body must
 * keep (`server.bodyTimeout`, `server.bodyMinRate`): Node reads and drops it before the connection can serve
 * another request, and a client trickling it would otherwise hold the socket for as long as it likes (the
 * server's own `requestTimeout` is off, see D-G47). Past the deadline the connection is closed.
 *
 * @param req - the request whose response has ended with its body incomplete.
 * @param pace - the body rules in effect.
 * @param timer - the clock and timer; the real ones by default.
 */
export function paceLeftover(req: IncomingMessage, pace: BodyPace, timer: DeadlineTimer = REAL_TIMER): void {
  if (pace.bodyTimeoutMs === 0) return;
  const deadline = new BodyDeadline(pace, () => req.socket.destroy(), timer);
  const done = () => deadline.finish();
  req.on('data', (chunk: Buffer) => deadline.received(chunk.length));
  req.once('end', done);
  req.once('close', done);
}
