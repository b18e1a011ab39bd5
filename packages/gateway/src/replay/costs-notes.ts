import type { ConfigReport } from './replay-report.js';

const n = (x: number) => x.toLocaleString('en-US');
const s = (x: number) => (x === 1 ? '' : 's');

/**
 * What a replay says of the costs it could not settle as the gateway would have, as sentences shared by the
 * terminal report and the HTML page: lines of a `count:` rule without a status, of a `bytes` cost without a size,
 * of a `header` or `json` cost without a cost field.
 *
 * @param c - one configuration's report.
 */
export function costsNotes(c: ConfigReport): string[] {
  const m = c.costs?.notReplayed;
  if (m === undefined) return [];
  const out: string[] = [];
  if (m.status > 0)
    out.push(
      `count: not replayed for ${n(m.status)} request${s(m.status)} whose line has no status (all counted): log the status (NGINX $status, Apache %>s) or name a JSON field with --field status=NAME`,
    );
  if (m.size > 0)
    out.push(
      `cost bytes: not replayed for ${n(m.size)} request${s(m.size)} whose line has no size (charged their reservation): log NGINX $body_bytes_sent or Apache %b, or name a JSON field with --field bytes=NAME`,
    );
  if (m.cost > 0)
    out.push(
      `cost header or json: not replayed for ${n(m.cost)} request${s(m.cost)} whose line has no cost (charged the fallback): log the upstream's cost or the usage's tokens and name the JSON field with --field cost=NAME`,
    );
  return out;
}
