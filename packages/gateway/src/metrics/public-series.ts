/**
 * The Prometheus text the proxy listener's `/metrics` serves: the scrape without the per-tenant series
 * (`<prefix>_quota_usage_ratio{tenant="..."}`, their `# HELP` and `# TYPE` lines too). The proxy listener answers
 * any client of the API, without a token, and a tenant's name and usage are its customers' business; the admin
 * listener's `/metrics`, behind its token, serves them.
 *
 * @param text - the whole scrape (with `--threads`, every thread's series aggregated).
 * @param prefix - `metrics.prefix`.
 * @returns the text without those lines; the same string when it has none.
 */
export function withoutTenantSeries(text: string, prefix: string): string {
  const name = `${prefix}_quota_usage_ratio`;
  if (!text.includes(name)) return text;
  const lines = text.split('\n');
  const kept: string[] = [];
  for (const line of lines) if (!ofSeries(line, name)) kept.push(line);
  return kept.join('\n');
}

/** Whether a line of the text format belongs to metric `name`: a sample, or its HELP or TYPE line. */
function ofSeries(line: string, name: string): boolean {
  if (line.startsWith('# HELP ') || line.startsWith('# TYPE ')) return nameAt(line, 7, name);
  return nameAt(line, 0, name);
}

/** True when `name` starts at `at` and ends there as a name: a label set, a space or the line's end follow. */
function nameAt(line: string, at: number, name: string): boolean {
  if (!line.startsWith(name, at)) return false;
  const next = line[at + name.length];
  return next === undefined || next === '{' || next === ' ';
}
