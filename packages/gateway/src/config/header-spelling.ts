/*
 * CGI-style servers hand a request header to the application under a name of their own: PHP, WSGI and Rack map
 * `-` and `_` alike to `_`, lighttpd and older Apache map every character but a letter or a digit to `_`. So
 * `X-Tenant-Id`, `x_tenant_id` and `x.tenant.id` all arrive as `HTTP_X_TENANT_ID`, and a header the gateway
 * strips or rewrites under one spelling must be stripped under all of them. The forms here write that name with
 * `-` in lower case, so that a header's usual spelling is its own.
 */

/** `name` is not a spelling of the header. */
export const NOT_SPELLING = 0;
/** `name` is the header's own spelling, character for character. */
export const SAME_SPELLING = 1;
/** `name` is another spelling of the header: a CGI-style server reads it as the same one. */
export const OTHER_SPELLING = 2;

/** Every character but a lower-case letter or a digit. */
const NOT_NAME_CHAR = /[^a-z0-9]/g;

/**
 * The name a CGI-style server reads a header as, written in lower case with `-` for every character but a letter
 * or a digit (`X_Tenant.Id` gives `x-tenant-id`). Built once per configured name, never per request.
 *
 * @param name - a header name.
 * @returns its spelling, the form {@link compareSpelling} compares against.
 */
export function cgiSpelling(name: string): string {
  return name.toLowerCase().replace(NOT_NAME_CHAR, '-');
}

const UPPER_A = 65;
const UPPER_Z = 90;
const LOWER_A = 97;
const LOWER_Z = 122;
const DIGIT_0 = 48;
const DIGIT_9 = 57;
const DASH = 45;

/**
 * Whether a request header `name` is a spelling of `spelling`, and which: compared character by character, ASCII
 * upper case read as lower case and every character but a letter or a digit as `-`. Nothing is allocated and a
 * name of another length is rejected at once: this runs for every request header.
 *
 * @param name - a request header name, as the client wrote it or as Node.js lowered it.
 * @param spelling - the header's spelling, from {@link cgiSpelling}.
 * @returns {@link SAME_SPELLING}, {@link OTHER_SPELLING} or {@link NOT_SPELLING}.
 * @example
 * compareSpelling('x.tenant.id', cgiSpelling('X-Tenant-Id')); // OTHER_SPELLING
 */
export function compareSpelling(name: string, spelling: string): number {
  if (name.length !== spelling.length) return NOT_SPELLING;
  let same = true;
  for (let i = 0; i < spelling.length; i++) {
    const given = name.charCodeAt(i);
    const want = spelling.charCodeAt(i);
    if (given === want) continue;
    same = false;
    let c = given;
    if (c >= UPPER_A && c <= UPPER_Z) c += 32;
    else if (!((c >= LOWER_A && c <= LOWER_Z) || (c >= DIGIT_0 && c <= DIGIT_9))) c = DASH;
    if (c !== want) return NOT_SPELLING;
  }
  return same ? SAME_SPELLING : OTHER_SPELLING;
}
