const INT = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const ONE = new Intl.NumberFormat('en-US', { maximumFractionDigits: 1 });

/** A whole count with thousands separators: `12,480`. */
export function count(n: number): string {
  return INT.format(n);
}

/** A rate: one decimal below 10, whole above: `3.5`, `120`. */
export function rate(n: number): string {
  return n < 10 ? ONE.format(n) : INT.format(n);
}

/** A share as a percentage: `0%`, `4.2%`, `100%`; a dash when there is nothing to divide. */
export function percent(part: number, whole: number): string {
  if (whole <= 0) return '-';
  const p = (part / whole) * 100;
  return `${p > 0 && p < 10 ? ONE.format(p) : INT.format(p)}%`;
}

/** Seconds as a short duration: `45 s`, `3 min`, `2 h`, `1 h 30 min`. */
export function duration(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600)
    return seconds % 60 === 0 ? `${seconds / 60} min` : `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
  const h = Math.floor(seconds / 3600);
  const m = Math.round((seconds % 3600) / 60);
  return m === 0 ? `${h} h` : `${h} h ${m} min`;
}

/** A wall-clock time of day, local: `14:03:27`. */
export function clock(unixMs: number): string {
  return new Date(unixMs).toLocaleTimeString('en-GB', { hour12: false });
}

/** A tier or other label that may be empty. */
export function orNone(s: string, none = '(none)'): string {
  return s === '' ? none : s;
}
