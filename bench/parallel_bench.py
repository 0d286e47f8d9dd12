"""The parallel engine against the single-process one, side by side in one run.

    python3 bench/parallel_bench.py                     # kafka truncate-on-fetch, 3 brokers: 3,099,209 states
    python3 bench/parallel_bench.py --model two-phase --protocol '' --const RM=8
    python3 bench/parallel_bench.py --rounds 2 --workers 1,2,auto

Each run is a fresh process (``kmc check ... --continue --json --workers N``; ``--workers 1`` is the
single-process engine, the baseline), the worker counts interleaved round by round so that the
machine's load falls on all alike; the load average is recorded before and after every run. For each
worker count: the counts must equal the single-process engine's (the script fails otherwise), the
wall-clock speed-up (best of the rounds, and each round's own ratio), the CPU critical-path speed-up
(single-process CPU over the parent's CPU plus the busiest worker's: the speed-up with one free core
a worker, which a shared machine's wall clock hides), the engine's own serial share and the speed-up
Amdahl's law then predicts on 16 and 64 cores; each parallel run also records where its levels' wall
time went (every round's wall time, each worker's CPU time in it and its idle time at the rounds'
ends). The figures are merged into bench/results.json under ``parallel_engine``.

The single-process engine encodes the frontier past its first ``checker.bfs.FRONTIER_OBJECT_STATES``
states a level and the workers do not, so on a configuration with large levels part of a wall or
critical-path ratio is that encoding; the workers' total CPU against their critical path is the
engine's own figure (bench/NOTES.md).
"""  # noqa: E501

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
KAFKA_2M = ("kafka", ["brokers=3", "records=1", "epochs=1", "crashes=1"], "truncate-on-fetch")


def amdahl(share: float, cores: int) -> float:
    return 1.0 / (share + (1.0 - share) / cores)


def run(model: str, consts: list[str], protocol: str, workers: str) -> dict[str, Any]:
    argv = [sys.executable, "-m", "kmc.cli", "check", model, "--continue", "--json", "--quiet"]
    for const in consts:
        argv += ["--const", const]
    if protocol:
        argv += ["--protocol", protocol]
    argv += ["--workers", workers]  # 1: the single-process engine, the baseline
    # the readable model on both sides: with a compiled kernel, --workers N would run the local
    # kernel search
    argv += ["--kernel", "off"]
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    out, err = proc.communicate()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the run and its workers, all reaped
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    if proc.returncode not in (0, 10, 12):
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {err.strip()[-500:]}")
    result = json.loads(out)
    extra = {k: result.get(k) for k in ("worker_cpu_seconds", "worker_system_cpu_seconds",
                                        "worker_idle_seconds", "round_wall_seconds",
                                        "worker_round_cpu_seconds", "parent_cpu_seconds",
                                        "serial_share", "amdahl_speedup")}
    return {
        "engine": result["engine"], "workers": result["workers"], "wall_seconds": round(wall, 2),
        "cpu_seconds": round(cpu, 2),
        "distinct": result["distinct_states"], "generated": result["states_generated"],
        "depth": result["depth"], "load_before": round(load, 2),
        "load_after": round(os.getloadavg()[0], 2),
        **{k: v for k, v in extra.items() if v is not None},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=KAFKA_2M[0])
    parser.add_argument("--const", action="append", default=None)
    parser.add_argument("--protocol", default=KAFKA_2M[2])
    parser.add_argument("--workers", default="2,auto", help="worker counts compared with --workers "
                                                            "1 (auto allowed)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results.json"))
    args = parser.parse_args()
    consts = args.const if args.const is not None else KAFKA_2M[1]
    counts = args.workers.split(",")
    runs: dict[str, list[dict[str, Any]]] = {"1": [], **{w: [] for w in counts if w != "1"}}
    for _ in range(args.rounds):
        for key in runs:
            row = run(args.model, consts, args.protocol, key)
            runs[key].append(row)
            print(json.dumps({"run": key, **row}), flush=True)
    single = min(runs["1"], key=lambda r: r["wall_seconds"])
    comparisons = []
    for key in [w for w in counts if w != "1"]:
        best = min(runs[key], key=lambda r: r["wall_seconds"])
        same = all((r["distinct"], r["generated"], r["depth"])
                   == (single["distinct"], single["generated"],
                        single["depth"]) for r in runs[key])
        if not same:
            print(f"--workers {key}: counts differ from the single-process engine", file=sys.stderr)
            return 1
        workers_cpu = best.get("worker_cpu_seconds") or [0.0]
        # the parent's CPU (interpreter start-up included, as in the baseline) plus the busiest
        # worker's
        critical = best["cpu_seconds"] - sum(workers_cpu) + max(workers_cpu)
        share = best.get("serial_share")
        row = {
            "workers": key, "resolved_workers": best["workers"], "same_counts": same,
            "wall_speedup": round(single["wall_seconds"] / best["wall_seconds"], 2),
            # every round's own ratio (the single process and the workers run one after the other in
            # a round), so that a reader sees the spread and not only the best pair
            "wall_speedup_by_round": [round(a["wall_seconds"] / b["wall_seconds"], 2)
                                      for a, b in zip(runs["1"], runs[key], strict=True)],
            # the single-process run's CPU seconds over the critical path
            "cpu_critical_path_speedup": round(single["cpu_seconds"] / critical, 2) if critical
            else None,
            "serial_share": share,
        }
        if share is not None:
            row["amdahl_speedup_16"] = round(amdahl(share, 16), 2)
            row["amdahl_speedup_64"] = round(amdahl(share, 64), 2)
        comparisons.append(row)
        print("  " + ", ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    report = {"model": args.model, "consts": consts, "protocol": args.protocol,
              "distinct": single["distinct"], "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
              "runs": runs, "comparisons": comparisons}
    path = Path(args.out)
    data = json.loads(path.read_text()) if path.exists() else {}
    data["parallel_engine"] = report
    path.write_text(json.dumps(data, indent=2) + "\n")
    print(f"figures merged into {path} (parallel_engine)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
