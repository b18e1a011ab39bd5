import { prometheusMetricNames } from 'sluice/prometheus';

/** The placeholder the template holds wherever a metric name starts; a plain token, never valid PromQL. */
const PREFIX_PLACEHOLDER = '{prefix}';

/**
 * The Prometheus alert rules on Sluice's metrics, with `{prefix}` where the metric name prefix goes. The one
 * source of the rules: deploy/prometheus/rules/rate-limiting.yaml is its rendering for the default prefix (a test
 * compares them byte for byte) and `sluice rules` renders it for a configuration's `metrics.prefix`, so the shipped
 * file and the command cannot drift apart. The first rule alerts on a
 * sustained rate of denials for one policy, tier and endpoint rule.
 */
export const ALERT_RULES_TEMPLATE = `# Prometheus alert rules on the rate limiter's metrics, metric name prefix \`{prefix}\` (gateway \`metrics.prefix\`,
# PrometheusMetrics \`prefix\`), as printed by \`sluice rules --config FILE\`. One template
# (packages/gateway/src/cli/alert-rules.ts) gives both that output and deploy/prometheus/rules/rate-limiting.yaml
# (the default prefix \`sluice\`): edit the template, a test holds the two equal.
# Load with \`rule_files\` in prometheus.yml; check with \`promtool check rules FILE\`.
groups:
  - name: rate_limiting
    rules:
      # More than 10 denials per second for one policy, tier and endpoint rule, sustained for 5 minutes.
      - alert: HighRateLimitExceeded
        expr: rate({prefix}_rate_limit_exceeded_total[5m]) > 10
        for: 5m
        labels:
          severity: warning
        annotations:
          summary: "High rate of rate limit exceeded events"
          description: >-
            Policy {{ $labels.policy }} (tier "{{ $labels.tier }}", rule "{{ $labels.rule }}") denied
            {{ $value | humanize }} requests per second over the last 5 minutes on {{ $labels.instance }}.

      # A tenant has used 80% or more of its quota over the rolling window (the quota tracker's gauge).
      - alert: TenantNearQuota
        expr: max by (tenant) ({prefix}_quota_usage_ratio) >= 0.8 < 1
        for: 5m
        labels:
          severity: warning
        annotations:
          summary: "Tenant near its quota"
          description: >-
            Tenant {{ $labels.tenant }} has used {{ $value | humanizePercentage }} of its quota over the window.

      # A tenant has used its whole quota.
      - alert: TenantQuotaExhausted
        expr: max by (tenant) ({prefix}_quota_usage_ratio) >= 1
        for: 1m
        labels:
          severity: critical
        annotations:
          summary: "Tenant quota exhausted"
          description: >-
            Tenant {{ $labels.tenant }} has used {{ $value | humanizePercentage }} of its quota over the window.

      # The rate limit store cannot answer and its failure mode is deciding instead (open: admit everything,
      # closed: deny everything, local: an in-process limiter per node).
      - alert: RateLimitStoreFailureModeActive
        expr: max by (instance, store, mode) ({prefix}_store_failure_mode_active) == 1
        for: 1m
        labels:
          severity: critical
        annotations:
          summary: "Rate limit store failure mode active"
          description: >-
            Store {{ $labels.store }} on {{ $labels.instance }} has been unavailable for over a minute; failure
            mode "{{ $labels.mode }}" is in effect.

  # The gateway shedding load before the limits decide: connection caps and the upstream pool (gateway only).
  - name: gateway_overload
    rules:
      # The proxy listener is full: every new client gets 503 until connections close. The admin listener's
      # GET /metrics still answers while the proxy port refuses its own /metrics.
      - alert: ProxyConnectionCapReached
        expr: sum by (instance) (rate({prefix}_connections_refused_total{reason="total"}[5m])) > 0
        for: 5m
        labels:
          severity: critical
        annotations:
          summary: "Proxy listener at server.maxConnections"
          description: >-
            The proxy listener on {{ $labels.instance }} refused {{ $value | humanize }} connections per second at
            server.maxConnections over the last 5 minutes. Raise the cap with the open file limit, or add nodes.

      # Clients held at server.maxConnectionsPerClient, more than one refusal a second for 10 minutes: one client
      # (or many behind one address) opens far more connections than the cap allows.
      - alert: ClientConnectionCapReached
        expr: sum by (instance) (rate({prefix}_connections_refused_total{reason="client"}[5m])) > 1
        for: 10m
        labels:
          severity: warning
        annotations:
          summary: "Clients at server.maxConnectionsPerClient"
          description: >-
            The proxy listener on {{ $labels.instance }} refused {{ $value | humanize }} connections per second at
            server.maxConnectionsPerClient over the last 5 minutes. Find the address in the warn log; a proxy in
            front of the gateway belongs in server.trustedProxies.

      # Admitted requests answered 503 because every upstream connection stayed busy for upstream.queueTimeout:
      # the upstream (or the pool's size) is the bottleneck.
      - alert: UpstreamQueueTimeouts
        expr: sum by (instance) (rate({prefix}_upstream_queue_timeouts_total[5m])) > 0
        for: 5m
        labels:
          severity: warning
        annotations:
          summary: "Requests time out waiting for an upstream connection"
          description: >-
            {{ $labels.instance }} answered {{ $value | humanize }} admitted requests per second with 503
            upstream_queue_timeout over the last 5 minutes. Check the upstream's latency, or raise
            upstream.connections.

      # Request bodies refused at upstream.maxBodiesPerClient, more than one every 10 seconds for 10 minutes:
      # clients upload more at once than the cap allows (or slow uploads hold their slots).
      - alert: UpstreamBodiesRefused
        expr: sum by (instance) (rate({prefix}_upstream_bodies_refused_total[5m])) > 0.1
        for: 10m
        labels:
          severity: warning
        annotations:
          summary: "Request bodies refused at upstream.maxBodiesPerClient"
          description: >-
            {{ $labels.instance }} answered {{ $value | humanize }} requests per second with 429
            too_many_request_bodies over the last 5 minutes.

      # Requests shed by load shedding (overload:), more than one a second for 5 minutes: the upstream runs at the
      # limit its latency or maxInFlight sets. Sheddable requests go first; the priority label says how deep it cuts.
      - alert: RequestsShed
        expr: sum by (instance, priority) (rate({prefix}_shed_total[5m])) > 1
        for: 5m
        labels:
          severity: warning
        annotations:
          summary: "Requests shed: the upstream is over capacity"
          description: >-
            {{ $labels.instance }} refused {{ $value | humanize }} {{ $labels.priority }} requests per second with
            503 temporary-reduced-capacity over the last 5 minutes. Check the upstream's capacity and latency, or
            the overload: limits.

      # Critical requests shed for a minute: the whole overload limit is in use, the reserve included.
      - alert: CriticalRequestsShed
        expr: sum by (instance) (rate({prefix}_shed_total{priority="critical"}[5m])) > 0
        for: 1m
        labels:
          severity: critical
        annotations:
          summary: "Critical requests shed: the overload reserve is used up"
          description: >-
            {{ $labels.instance }} refused {{ $value | humanize }} critical requests per second with 503
            temporary-reduced-capacity over the last 5 minutes: the upstream cannot take even its reserved share.
`;

/**
 * Renders {@link ALERT_RULES_TEMPLATE} for a metric name prefix.
 *
 * @param prefix - the prefix of the metric names (`metrics.prefix` of the gateway); default `sluice`.
 * @returns the rules file as YAML text, ready for `rule_files` in prometheus.yml.
 * @throws SluiceError `ERR_INVALID_OPTION` when the prefix is not a metric name start (`[a-zA-Z_][a-zA-Z0-9_]*`),
 *   the same check the Prometheus sink applies, so the rules name exactly the series the sink exports.
 *
 * @example
 * ```ts
 * renderAlertRules('stellaops'); // ...expr: rate(stellaops_rate_limit_exceeded_total[5m]) > 10...
 * ```
 */
export function renderAlertRules(prefix = 'sluice'): string {
  prometheusMetricNames(prefix);
  return ALERT_RULES_TEMPLATE.replaceAll(PREFIX_PLACEHOLDER, prefix);
}
