import type { IncomingMessage } from 'node:http';
import type { Writable } from 'node:stream';
import type { BodyDeadline } from './body-deadline.js';

/**
 * Pipes a request body into `into` as `Readable.pipe` does, and tells `deadline` what arrived and when the
 * gateway stops reading: `pipe` pauses the request on backpressure without a word, and a body held back by a full
 * upstream must not count against the client's pace.
 *
 * @param req - the client request, whose body nobody else reads.
 * @param into - where the body goes (the size limit, then the upstream request).
 * @param deadline - the body's deadline; finished when the body ends, the request closes or `into` is gone.
 */
export function pipePaced(req: IncomingMessage, into: Writable, deadline: BodyDeadline): void {
  const onDrain = () => {
    deadline.release();
    req.resume();
  };
  const onData = (chunk: Buffer) => {
    deadline.received(chunk.length);
    if (!into.write(chunk)) {
      req.pause();
      deadline.hold();
      into.once('drain', onDrain);
    }
  };
  const onEnd = () => {
    deadline.finish();
    into.end();
  };
  // `into` destroyed (body too large, too slow, upstream request cut): stop feeding it, as `pipe` does on unpipe.
  const onGone = () => {
    deadline.finish();
    req.off('data', onData);
    req.off('end', onEnd);
    into.off('drain', onDrain);
    req.pause();
  };
  req.on('data', onData);
  req.once('end', onEnd);
  req.once('close', () => deadline.finish());
  into.once('close', onGone);
}
