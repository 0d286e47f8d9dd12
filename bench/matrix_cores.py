"""``kmc matrix`` on one core and on every core, side by side: the same table, and the wall time
ratio.

    python3 bench/matrix_cores.py [--workers 2] [-- MATRIX ARGUMENTS ...]

Runs ``kmc matrix --quiet --workers 1`` and then ``--workers N`` (default: the cores this process
may use) in fresh interpreters, checks that the two tables are identical but for the footer's time,
and prints the wall and CPU seconds of each (the CPU of the command and its worker processes) with
the load average before and after each run. The ratio is only meaningful on cores nothing else uses;
the load says whether they were (above 1.5 beside the runs' own workers the script says so).
``--json FILE`` writes the figures and both tables.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from checker.parallel import available_cores  # noqa: E402

#: a load average above which two cores were not free for the runs (the machine's other work shared
#: them)
BUSY = 1.5


def run(workers: int, extra: list[str]) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = os.getloadavg()[0]
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "kmc", "matrix", "--quiet", "--workers",
                          str(workers), *extra],
                         capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "COLUMNS": "130"})
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = out.stdout.splitlines()
    return {"workers": workers, "exit": out.returncode, "wall_s": round(wall, 1),
            "cpu_s": round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 1),
            "load_before": load, "load_after": os.getloadavg()[0], "table": lines[:-1],
            "footer": lines[-1] if lines else ""}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=available_cores())
    parser.add_argument("--json", metavar="FILE", help="also write the figures here")
    parser.add_argument("extra", nargs=argparse.REMAINDER, help="arguments for kmc matrix (after "
                                                                "--)")
    args = parser.parse_args()
    extra = [a for a in args.extra if a != "--"]
    one, many = run(1, extra), run(args.workers, extra)
    for r in (one, many):
        if r["exit"] not in (0, 20) or not r["table"]:
            print(f"matrix_cores: kmc matrix {' '.join(extra)} --workers {r['workers']} failed "
                  f"(exit {r['exit']})",
                  file=sys.stderr)
            return 2
    same = one["table"] == many["table"] and one["exit"] == many["exit"]
    for r in (one, many):
        print(f"--workers {r['workers']}: {r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} s CPU (load "
              f"{r['load_before']:.2f} -> {r['load_after']:.2f}); {r['footer']}")
    print(f"tables identical: {same}; wall {many['wall_s'] / one['wall_s']:.3f} of one core's")
    # the load beside the runs' own: a run of N workers raises the one-minute average towards N by
    # itself
    busiest = max(max(r["load_before"], r["load_after"] - r["workers"] + 1) for r in (one, many))
    if busiest > BUSY:
        print(f"other work reached a load of {busiest:.2f} beside the runs' own (over {BUSY}): it "
              "shared the cores, so the "
              "wall ratio says little; python3 bench/matrix_jobs.py computes the makespan from "
              "each search's CPU instead")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"runs": [dict(r) for r in (one, many)], "tables_identical": same}, f,
                      indent=1)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
