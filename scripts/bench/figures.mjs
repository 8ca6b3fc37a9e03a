// Figures: statistics over runs, budgets met or missed, and the table `make bench` prints.
//
// A figure is `{ section, name, value, unit, budget?, note? }`; `budget` is `{ max, text }` and the
// figure meets it when value ≤ max. Values are numbers in `unit` (ms, KiB, MiB, bytes, ratio, count).

/** Median, p95, p99, min and max of `values` (nearest-rank percentiles). */
export function stats(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const n = sorted.length;
  if (n === 0) return { n, median: NaN, p95: NaN, p99: NaN, min: NaN, max: NaN };
  const rank = (p) => sorted[Math.min(n - 1, Math.max(0, Math.ceil((p / 100) * n) - 1))];
  const median = n % 2 ? sorted[(n - 1) / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  return { n, median, p95: rank(95), p99: rank(99), min: sorted[0], max: sorted[n - 1] };
}

/** `shown` replaces the formatted value in the table (for several numbers in one cell). */
export function figure(section, name, value, unit, { budget, note, shown } = {}) {
  return {
    section, name, value, unit,
    ...(shown ? { shown } : {}),
    ...(budget ? { budget, met: value <= budget.max } : {}),
    ...(note ? { note } : {}),
  };
}

const digits = { min: 1, ms: 1, KiB: 1, MiB: 1, bytes: 0, ratio: 1, count: 0, "%": 1 };

export function format(value, unit) {
  if (typeof value !== "number" || Number.isNaN(value)) return "—";
  const text = value.toLocaleString("en-US", {
    minimumFractionDigits: digits[unit] ?? 1,
    maximumFractionDigits: digits[unit] ?? 1,
  });
  return unit === "count" || unit === "ratio" ? (unit === "ratio" ? `${text}×` : text) : `${text} ${unit}`;
}

/** Runs as `median (min–max, n runs)`, or `median, p95 …` when `p95` is asked for. */
export function spread(s, unit, { p95 = false } = {}) {
  const range = `${format(s.min, unit)}–${format(s.max, unit)}`;
  return p95
    ? `p50 ${format(s.median, unit)}, p95 ${format(s.p95, unit)} (n=${s.n}, ${range})`
    : `${format(s.median, unit)} (n=${s.n}, ${range})`;
}

/** The table of every figure, a section at a time; budgets say met or MISSED. */
export function table(figures) {
  const rows = figures.map((f) => [
    f.section,
    f.name,
    f.shown ?? format(f.value, f.unit),
    f.budget ? f.budget.text : "",
    f.budget ? (f.met ? "met" : "MISSED") : "",
  ]);
  const header = ["section", "figure", "value", "budget", ""];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells) => cells.map((c, i) => c.padEnd(widths[i])).join("  ").trimEnd();
  const out = [line(header), line(widths.map((w) => "-".repeat(w)))];
  let section = null;
  for (const row of rows) {
    if (section !== null && row[0] !== section) out.push("");
    out.push(line(row[0] === section ? ["", ...row.slice(1)] : row));
    section = row[0];
  }
  return out.join("\n");
}
