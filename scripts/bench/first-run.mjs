// Section 7, a first run: `make run` to its first page, and `make test`, on a fresh machine (issue
// 34: ≤ 12 and ≤ 20 minutes on 2 cores; issue 25 had 20 and 40). Timing them takes the better part of an hour, so the bench
// does not run them: it shows what scripts/time-fresh.sh last recorded in target/bench/, with the
// commit and the date it was measured at. Nothing recorded yet is shown as such.

import * as fs from "node:fs";
import * as path from "node:path";

import { figure } from "./figures.mjs";
import { root } from "./processes.mjs";

const BUDGETS_MIN = { run: 12, test: 20 };
const NAMES = { run: "make run → first page, fresh machine", test: "make test, fresh machine" };

export async function firstRun() {
  const figures = Object.entries(BUDGETS_MIN).map(([what, max]) => {
    const file = path.join(root, `target/bench/fresh-${what}.json`);
    const budget = { max, text: `≤ ${max} min (2 cores)` };
    if (!fs.existsSync(file)) {
      return figure("first run", NAMES[what], NaN, "min", {
        shown: "not measured here",
        note: `run scripts/time-fresh.sh ${what} (it records ${path.relative(root, file)})`,
      });
    }
    const record = JSON.parse(fs.readFileSync(file, "utf8"));
    const minutes = record.seconds / 60;
    const passed = what === "run" || record.status === 0;
    return figure("first run", NAMES[what], passed ? minutes : Infinity, "min", {
      budget,
      shown: `${minutes.toFixed(1)} min${passed ? "" : ` (exit ${record.status})`}`,
      note: `measured ${record.date} on ${record.commit} by scripts/time-fresh.sh`,
    });
  });
  return { figures, details: {} };
}
