import { fileURLToPath } from 'node:url';
import { SCHEMA_URL } from '../config/schema.js';

/**
 * The text of `sluice --help`. It names the JSON Schema by where this package has it (in an installed package
 * node_modules/@sluice/gateway/schema/...), found from the running code, not by its place in the repository.
 */
export const HELP_TEXT = `sluice: a rate-limiting reverse proxy configured by one YAML file

Usage:
  sluice serve --config FILE [--upstream URL] [--host HOST] [--port PORT] [--threads N]
  sluice validate FILE... [--upstream URL]
  sluice demo [--host HOST] [--port PORT]
  sluice rules --config FILE
  sluice replay --config FILE [--against OTHER.yaml] [--reorder-window DURATION] [--json] [--html FILE] LOG...
  sluice recommend [--config FILE] [--spare SHARE] [--json] [--out FILE] LOG...
  sluice hash-key KEY
  sluice override set|list|rm|history ...   (sluice override --help)
  sluice block set|list|rm ...
  sluice --help | --version

Commands:
  serve      Run the gateway. Flags win over the file. SIGHUP (or saving the file) reloads the
             configuration, keeping bucket state; an invalid file keeps the running configuration.
             SIGTERM or Ctrl-C drains requests in flight, then exits. With a decision: section
             (HTTP decision API for NGINX auth_request) or an envoy: section (Envoy rate limit
             service, gRPC) those listeners start too, and no upstream is needed. Listens on
             --host, else server.host, else SLUICE_DEFAULT_HOST (0.0.0.0 in the container image),
             else 127.0.0.1.
  validate   Check a configuration file against the schema and the start checks; prints every
             violation as FILE:LINE:COLUMN PATH: MESSAGE and exits 1 when there is any. Warnings
             (valid but risky settings, each with a W_ code and a suggestion) keep exit 0.
             --upstream URL checks the file as serve --upstream URL would run it.
  demo       The example tiers and endpoint rules in front of a built-in echo upstream, on the
             memory store, with a browser page at /demo/ (what npm start runs). Listens on
             --host, else SLUICE_DEMO_HOST (0.0.0.0 in the container image), else 127.0.0.1.
  rules      Print the Prometheus alert rules (deploy/prometheus/rules/rate-limiting.yaml) for the
             metric prefix of FILE (metrics.prefix), ready for rule_files in prometheus.yml.
  replay     Run access logs through FILE's admission (tiers, endpoint rules, classes, exemptions,
             costs, queues) on the logs' own time, from empty buckets, and report what it would
             have done: requests, allowed, queued and limited per tier and per policy, the keys
             limited most (first and last time, Retry-After), the busiest minute. --against
             OTHER.yaml decides every request under both files and lists the requests that flip
             (allowed to limited and back) per policy and key. --json prints the report as JSON;
             --html FILE writes a self-contained page with a chart over time.
             LOG is a file (gzip recognised by its content, UTF-16/32 decoded) or - for standard
             input; several logs are merged by time (rotated files in any order, one log per
             server). --format auto (default, per log from its first line), combined, common,
             envoy, json or gateway (the gateway's own request log). JSON logs: --field NAME=PATH
             maps time, method, path, request, client, tenant, app, user, tier, apikey, cost,
             duration, status or bytes to a dotted field (repeatable; status, bytes and cost settle
             cost: and count: rules); --duration-unit s|ms|us reads whole-number
             durations (Apache %T: s), which hold concurrency slots. Lines that are no request are counted and their first
             line numbers shown; lines of one log earlier than the line before them are decided at
             the later time. Memory stays bounded by the key cap of FILE.
  recommend  Propose tiers and endpoint rules from access logs: per endpoint pattern (FILE's
             rules, or the most requested paths with numeric and UUID segments folded to *,
             or :id as the last segment), the distribution of per-client peak rates over 1 s,
             1 min and 1 h (p50, p90, p99, max), and limits that would have limited at most
             --spare of the clients (default 0.01) and never the p99 client, printed as a
             configuration file that validate accepts, then confirmed by a replay of the logs
             under it (printed at the end). Logs spanning less than an hour give no
             requestsPerHour (FILE's is kept), and a warning names the span.
  hash-key   Print the SHA-256 of an API key, for the hash field of the API key file.
  override   Give a key, tenant, prefix or address range other limits (or none) at run time, for a
             while, through a running gateway's admin API (SLUICE_ADMIN_URL, SLUICE_ADMIN_TOKEN).
  block      Refuse a key, tenant, prefix or address range with 403, or 429 until the block ends.

Options:
  -c, --config FILE     Configuration file (YAML); \${ENV} and \${ENV:-default} are substituted.
  -u, --upstream URL    Upstream base URL (upstream.url).
      --host HOST       Listen address (server.host, default 127.0.0.1).
  -p, --port PORT       Listen port (server.port, default 8080).
      --threads N       serve: N (1 to 100) worker threads on the one port (on Linux;
                        default one per core there, at most 100, else 1). The memory store is
                        shared by the threads, so limits hold over all of them; the admin API,
                        dashboard, decision API and Envoy service run in the first thread and
                        /metrics answers for every thread.
      --against FILE    replay: a second configuration to compare with.
      --format FORMAT   replay, recommend: auto, combined, common, envoy, json or gateway.
      --field NAME=PATH replay, recommend: where a JSON log holds a request fact (repeatable).
      --json            replay, recommend: print JSON instead of text.
      --html FILE       replay: also write the report as one self-contained HTML page.
      --spare SHARE     recommend: the largest share of clients the limits may limit
                        (0 to 0.5, default 0.01).
      --top N           recommend: path patterns proposed without FILE (default 10).
      --out FILE        recommend: write the proposed configuration alone to FILE.
  -h, --help            This text.
  -v, --version         The version.

Editors: the JSON Schema is ${fileURLToPath(SCHEMA_URL)}; with the YAML
language server, put "# yaml-language-server: $schema=<path or URL of the schema>" on the first
line.
`;
