/**
 * One request read from an access log line. The parsers fill one record in place per line (no object per line);
 * fields a format does not carry stay `undefined`.
 */
export class LogRecord {
  /** Milliseconds since the Unix epoch (UTC) of the request. */
  timeMs = 0;
  /** Upper-case method. */
  method = 'GET';
  /** The request target as logged (path and query). */
  target = '/';
  /** The client's address, or `undefined` when the line has none. */
  clientIp: string | undefined = undefined;
  /** The recorded caller: tenant, client application, user, tier and API key hash, when the log has them. */
  tenant: string | undefined = undefined;
  client: string | undefined = undefined;
  user: string | undefined = undefined;
  tier: string | undefined = undefined;
  apiKeyHash: string | undefined = undefined;
  /** Tokens the request costs; 1 unless the log maps a cost field. */
  cost = 1;
  /**
   * How long the request took, in milliseconds (NGINX `$request_time`, Apache `%D` or `%T`, Envoy `%DURATION%`, a
   * JSON log's `duration` field), or -1 when the line has none: replay holds a concurrency slot for it.
   */
  durationMs = -1;
  /** The response status; 0 when the line has none (a `count:` rule then counts the request). */
  status = 0;
  /** Response body bytes (`%b`, `$body_bytes_sent`, a JSON field); -1 when the line has none. */
  bytes = -1;
  /** Whether the line gave the cost (a JSON log's cost field): for a `header` or `json` cost, what it settled. */
  costLogged = false;
  /** The index of the log the line came from, among the logs of a replay (set by the merge of several). */
  source = 0;

  /** Clears the fields a parser may leave unset, before the next line. */
  clear(): void {
    this.method = 'GET';
    this.target = '/';
    this.clientIp = undefined;
    this.tenant = undefined;
    this.client = undefined;
    this.user = undefined;
    this.tier = undefined;
    this.apiKeyHash = undefined;
    this.cost = 1;
    this.durationMs = -1;
    this.status = 0;
    this.bytes = -1;
    this.costLogged = false;
  }

  /**
   * Takes every field of another record (a line moved from its log's ring into the replay's reorder window). A
   * field added to the class must be copied here too, or the merge of several logs loses it.
   */
  copyFrom(o: LogRecord): void {
    this.timeMs = o.timeMs;
    this.method = o.method;
    this.target = o.target;
    this.clientIp = o.clientIp;
    this.tenant = o.tenant;
    this.client = o.client;
    this.user = o.user;
    this.tier = o.tier;
    this.apiKeyHash = o.apiKeyHash;
    this.cost = o.cost;
    this.durationMs = o.durationMs;
    this.status = o.status;
    this.bytes = o.bytes;
    this.costLogged = o.costLogged;
    this.source = o.source;
  }

  /** True when the line names a caller beyond its address (then replay uses that identity). */
  get identified(): boolean {
    return (
      this.tenant !== undefined ||
      this.client !== undefined ||
      this.user !== undefined ||
      this.tier !== undefined ||
      this.apiKeyHash !== undefined
    );
  }
}

/**
 * Reads one line into a record.
 *
 * @param line - the line without its line break.
 * @param into - the record to fill (cleared by the caller).
 * @returns true when the line is a request of this format; false for a line the format does not know; `'skip'`
 *   for a line the format knows that is no request to admit (the gateway's own start-up lines, its health answers).
 */
export type LineParser = (line: string, into: LogRecord) => boolean | 'skip';
