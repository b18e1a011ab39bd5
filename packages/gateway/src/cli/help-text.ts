/** The text of `sluice --help`. */
export const HELP_TEXT = `sluice: a rate-limiting reverse proxy configured by one YAML file

Usage:
  sluice serve --config FILE [--upstream URL] [--host HOST] [--port PORT] [--threads N]
  sluice validate FILE
  sluice demo [--host HOST] [--port PORT]
  sluice rules --config FILE
  sluice hash-key KEY
  sluice override set|list|rm|history ...   (sluice override --help)
  sluice block set|list|rm ...
  sluice --help | --version

Commands:
  serve      Run the gateway. Flags win over the file. SIGHUP (or saving the file) reloads the
             configuration, keeping bucket state; an invalid file keeps the running configuration.
             SIGTERM or Ctrl-C drains requests in flight, then exits. With a decision: section
             (HTTP decision API for NGINX auth_request) or an envoy: section (Envoy rate limit
             service, gRPC) those listeners start too, and no upstream is needed.
  validate   Check a configuration file against the schema and the start checks; prints every
             violation as FILE:LINE:COLUMN PATH: MESSAGE and exits 1 when there is any. Warnings
             (valid but risky settings, each with a W_ code and a suggestion) keep exit 0.
  demo       The example tiers and endpoint rules in front of a built-in echo upstream, on the
             memory store, with a browser page at /demo/ (what npm start runs).
  rules      Print the Prometheus alert rules (deploy/prometheus/rules/rate-limiting.yaml) for the
             metric prefix of FILE (metrics.prefix), ready for rule_files in prometheus.yml.
  hash-key   Print the SHA-256 of an API key, for the hash field of the API key file.
  override   Give a key, tenant, prefix or address range other limits (or none) at run time, for a
             while, through a running gateway's admin API (SLUICE_ADMIN_URL, SLUICE_ADMIN_TOKEN).
  block      Refuse a key, tenant, prefix or address range with 403, or 429 until the block ends.

Options:
  -c, --config FILE     Configuration file (YAML); \${ENV} and \${ENV:-default} are substituted.
  -u, --upstream URL    Upstream base URL (upstream.url).
      --host HOST       Listen address (server.host, default 127.0.0.1).
  -p, --port PORT       Listen port (server.port, default 8080).
      --threads N       serve: N worker threads on the one port (Node.js >= 22.12 on Linux;
                        default one per core there, else 1). The memory store is shared by the
                        threads, so limits hold over all of them; the admin API, dashboard,
                        decision API and Envoy service run in the first thread and /metrics
                        answers for every thread.
  -h, --help            This text.
  -v, --version         The version.

Editors: the JSON Schema is packages/gateway/schema/rate-limits.schema.json; with the YAML language
server, put "# yaml-language-server: $schema=<path or URL of the schema>" on the first line.
`;
