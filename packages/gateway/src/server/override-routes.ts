import type { IncomingMessage, ServerResponse } from 'node:http';
import { ErrorCode, SluiceError } from 'sluice';
import { type OverrideControl, OverrideInputError } from '../admission/override-control.js';
import { Problems, sendProblem } from '../admission/problem-response.js';
import { AdminProblems } from './admin-problems.js';
import { drainBody, readBody } from './drain-body.js';

/** The largest override request body read; a rule is a few hundred bytes. */
const MAX_BODY = 16 * 1024;
/** The most of a refused body read and dropped before the refusal goes out (see `readJson`). */
const REFUSED_DRAIN_LIMIT = 1024 * 1024;

/** Sends a JSON answer. */
export type SendJson = (status: number, body?: unknown, extra?: Record<string, string>) => void;

/**
 * The admin routes of run-time overrides and blocks:
 * - `GET /overrides` (and `GET /blocks`, blocks only): the rules in force with the seconds left; with `?offset=&limit=`
 *   one page of them (limit 1 to 1,000) and their `total`, as the dashboard reads 100,000 rules;
 * - `PUT /overrides`: set one (JSON body: `pattern`, optional `policy` or `tier`, then `quota`/`window`/`burst`,
 *   `unlimited: true` or `block: 403 | 429`, optional `ttlSeconds` or `expiresAt`, and `reason`);
 * - `DELETE /overrides?id=<id>&reason=<why>`: remove one (404 when none has the id);
 * - `GET /overrides/history`: the last 1,000 changes of operators and the last 1,000 automatic ones (penalty
 *   blocks), merged oldest first: a flood of automatic blocks never pushes an operator's change out.
 *
 * The listings answer 503 (`overrides_unavailable`), like a write, while the rules in the store are unknown (a
 * gateway started while Redis was down and has not read them yet): an empty list would say there is no rule.
 *
 * @returns false when the request is not for these routes.
 */
export async function serveOverrides(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  control: OverrideControl,
  who: string,
  send: SendJson,
): Promise<boolean> {
  const path = url.pathname;
  if (path !== '/overrides' && path !== '/overrides/history' && path !== '/blocks') return false;
  const instance = path;
  try {
    if (path === '/overrides/history' || path === '/blocks') {
      if (req.method !== 'GET') {
        sendProblem(res, AdminProblems.methodNotAllowed('GET'), instance, '', { allow: 'GET' });
        return true;
      }
      if (path === '/blocks') {
        await control.refresh();
        checkLoaded(control);
        send(200, { store: control.kind, blocks: control.list().filter((r) => r.effect === 'block') });
      } else send(200, { changes: await control.history() });
      return true;
    }
    if (req.method === 'GET') {
      await control.refresh();
      checkLoaded(control);
      const page = pageOf(url);
      if (typeof page === 'string') {
        sendProblem(res, Problems.badRequest(page), instance, '');
        return true;
      }
      if (page === undefined) send(200, { store: control.kind, overrides: control.list() });
      else {
        const { rules, total } = control.page(page.offset, page.limit);
        send(200, { store: control.kind, overrides: rules, total, offset: page.offset, limit: page.limit });
      }
      return true;
    }
    if (req.method === 'PUT') {
      const body = await readJson(req, res);
      send(200, { override: await control.set(body, who) });
      return true;
    }
    if (req.method === 'DELETE') {
      const id = url.searchParams.get('id');
      if (id === null || id === '') {
        sendProblem(
          res,
          Problems.invalidOverride('id', 'id must name the rule to remove (?id=<id>)'),
          instance,
          '',
        );
        return true;
      }
      const reason = url.searchParams.get('reason') ?? 'removed';
      const gone = await control.remove(id, who, reason);
      if (gone === undefined)
        sendProblem(res, AdminProblems.notFound(`No override has the id "${id}".`), instance, '');
      else send(200, { removed: gone });
      return true;
    }
    const allow = 'GET, PUT, DELETE';
    sendProblem(res, AdminProblems.methodNotAllowed(allow), instance, '', { allow });
  } catch (e) {
    if (e instanceof BodyTooLarge) {
      // 413 as the proxy answers a body over its limit, with the limit as a number for programs.
      const p = { ...Problems.tooLarge(e.limit), field: 'body' };
      sendProblem(res, p, instance, '', {}, { limit: e.limit });
    } else if (e instanceof OverrideInputError) {
      sendProblem(res, Problems.invalidOverride(e.field, e.message), instance, '');
    } else if (e instanceof SluiceError && e.code === ErrorCode.OverridesFull) {
      sendProblem(res, Problems.overridesFull(e.message), instance, '');
    } else if (e instanceof SluiceError && e.code === ErrorCode.StoreUnavailable) {
      sendProblem(res, Problems.overridesUnavailable(e.message), instance, '');
    } else {
      throw e;
    }
  }
  return true;
}

/**
 * Refuses a listing while the rules are unknown, with the error a write gets when the store cannot be reached.
 *
 * @throws SluiceError `ERR_STORE_UNAVAILABLE` when the store has not answered since the gateway started.
 */
function checkLoaded(control: OverrideControl): void {
  if (control.loaded) return;
  throw new SluiceError(
    ErrorCode.StoreUnavailable,
    `the overrides and blocks in the ${control.kind} store are not known: it has not answered since this gateway started, so the list cannot be given (the rules it holds still apply once it answers)`,
  );
}

/** A request body over the admin API's limit: answered 413 (`body_too_large`), not as an invalid override. */
class BodyTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`body must be at most ${limit} bytes`);
  }
}

/**
 * The request body as JSON. A body over {@link MAX_BODY} is refused with `Connection: close`; the rest is first
 * read and dropped, up to {@link REFUSED_DRAIN_LIMIT} and for at most a second, because closing a connection
 * while the client still sends makes the kernel reset it and the client can lose the 413 with it. A larger
 * declared body is refused without reading. The request stream is never destroyed.
 *
 * @param res - the answer, told to close the connection when the body is refused for its size.
 * @throws BodyTooLarge for a body over {@link MAX_BODY}; OverrideInputError naming `body` for one not JSON.
 */
async function readJson(req: IncomingMessage, res: ServerResponse): Promise<unknown> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared <= MAX_BODY) {
    const read = await readBody(req, MAX_BODY, true, undefined);
    if (read.body !== undefined) {
      try {
        return JSON.parse(read.body.toString('utf8'));
      } catch {
        throw new OverrideInputError('body', 'body must be a JSON object');
      }
    }
    if (read.size <= MAX_BODY) throw new Error('the request closed before its body ended');
  }
  if (declared <= REFUSED_DRAIN_LIMIT) await drainBody(req, REFUSED_DRAIN_LIMIT);
  res.setHeader('connection', 'close');
  throw new BodyTooLarge(MAX_BODY);
}

/** The most rules one page of `GET /overrides` holds. */
const PAGE_MAX = 1000;

/**
 * The page asked by `?offset=&limit=`: `undefined` when neither is given (every rule), or why it is refused.
 */
function pageOf(url: URL): { offset: number; limit: number } | string | undefined {
  const o = url.searchParams.get('offset');
  const l = url.searchParams.get('limit');
  if (o === null && l === null) return undefined;
  const offset = o === null ? 0 : Number(o);
  const limit = l === null ? 100 : Number(l);
  if (!/^\d+$/.test(o ?? '0') || !Number.isSafeInteger(offset)) {
    return `offset must be an integer >= 0, got ${JSON.stringify(o)}`;
  }
  if (!/^\d+$/.test(l ?? '100') || limit < 1 || limit > PAGE_MAX) {
    return `limit must be an integer from 1 to ${PAGE_MAX}, got ${JSON.stringify(l)}`;
  }
  return { offset, limit };
}
