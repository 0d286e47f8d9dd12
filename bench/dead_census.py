"""What makes a Kafka configuration's states distinct: a census of the reduced search's states, for
levers.

    python3 bench/dead_census.py                              # 2.1.0 brokers=3 records=1 epochs=1 crashes=0, --symmetry
    python3 bench/dead_census.py --protocol 3.9.1 --const brokers=3 --const records=1 --const epochs=1 \
        --const crashes=0 [--max-states N] [--json FILE]

Runs the search under ``--symmetry`` (bounded by ``--max-states`` at a level's end, if given), then
for each projection of a state (a part of it dropped) counts the distinct canonical forms the states
fall into: states / that count is the most a reduction that forgets that part could give (an upper
bound: it says nothing of whether forgetting it is sound). Projections:

* ``network``: every message in flight dropped; ``leader_and_isr`` / ``answers``: every LeaderAndIsr
  (on the KRaft rows: the partition change a broker replays), every FetchResponse and
  OffsetsForLeaderEpoch answer dropped; ``alter_answers``: every AlterPartition answer dropped (the
  KRaft rows and the ZooKeeper rows with AlterIsr);
* ``noop_now``: the messages whose delivery in the state itself would change nothing but the network
  (the model's own step run on the state), dropped: the most dead-message elimination could give;
* ``dead``: the messages ``spec.kafka.dead`` declares dead (what ``--reduce dead`` drops; the
  reduced search stores exactly this many states, the census's check that the reduction is what it
  claims);
* ``retried``: only the answers with NOT_LEADER / UNKNOWN_LEADER_EPOCH dropped;
* ``ghosts``: the ghost fields no protocol step reads (a broker's incarnation, stale, reconciled,
  idle cause; the committed and acknowledged records) set to constants (every default invariant
  reads some of them).

It also counts the messages in flight by kind, and which of them are no-ops now and dead.

    python3 bench/dead_census.py --protocol kraft-4.1 --const brokers=3 ... --levels 11

``--levels D`` instead searches the configuration to depth D twice under ``--symmetry``, without and
with ``--reduce dead`` (one process, no invariant), and prints each level's new orbits and the
factor between the two (level by level and cumulated): the reduction's factor where both searches
can reach.
"""  # noqa: E501

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

from orbit_sizes import reachable  # noqa: E402

import spec.kafka  # noqa: E402, F401 - registers the model
from spec.errors import UsageError  # noqa: E402
from spec.kafka.state import (  # noqa: E402
    ALTER_PARTITION_RESPONSE,
    FETCH_RESPONSE,
    KIND_NAMES,
    LEADER_AND_ISR,
    NOT_LEADER,
    OFFSETS_FOR_LEADER_EPOCH_RESPONSE,
    STOP_REPLICA,
    UNKNOWN_LEADER_EPOCH,
)
from spec.kafka.updates import remove_message  # noqa: E402
from spec.registry import build_model  # noqa: E402

ANSWERS = (FETCH_RESPONSE, OFFSETS_FOR_LEADER_EPOCH_RESPONSE)


def noop_now(model, s, m) -> bool:
    """Whether delivering ``m`` in ``s`` would change nothing but the network (the model's own step;
    the partition change and the AlterPartition answer as the row's control plane delivers them)."""
    if m.kind == LEADER_AND_ISR:
        after = model.control_plane.apply_leader_and_isr(model, s, m)
    elif m.kind == ALTER_PARTITION_RESPONSE:
        out: list = []
        receive = (model._receive_alter_response if model.features.kraft
                   else model._receive_alter_isr_response)
        receive(s, m, out.append)
        return all(t == s.with_(network=remove_message(s.network, m)) for _, t in out)
    elif m.kind == STOP_REPLICA:
        after = model._apply_stop_replica(s, m)
    elif m.kind == FETCH_RESPONSE:
        after = model._receive_fetch_state(s, m)
    elif m.kind == OFFSETS_FOR_LEADER_EPOCH_RESPONSE:
        after = model._receive_offsets_state(s, m)
    else:
        return False  # a request: serving it sends an answer
    return after == s.with_(network=remove_message(s.network, m))


def census(model, states: list) -> dict:
    canonical = model.canonical
    try:
        reducer = model.dead_messages()
    except UsageError:  # a row --reduce dead refuses: no "dead" projection beyond the no-op-now one
        reducer = None
    kinds, noop_kinds, dead_kinds = Counter(), Counter(), Counter()
    sizes = Counter()
    projections: dict[str, set] = {name: set() for name in (
        "network", "leader_and_isr", "answers", "alter_answers", "noop_now", "dead", "retried",
        "ghosts")}

    def without(s, drop) -> object:
        return canonical(s.with_(network=tuple([m for m in s.network if not drop(m)])))

    for s in states:
        sizes[len(s.network)] += 1
        noop = [m for m in s.network if noop_now(model, s, m)]
        dead = [m for m in s.network if reducer is not None and reducer.dead(s, m)]
        for m in s.network:
            kinds[KIND_NAMES[m.kind]] += 1
        for m in noop:
            noop_kinds[KIND_NAMES[m.kind]] += 1
        for m in dead:
            dead_kinds[KIND_NAMES[m.kind]] += 1
        projections["network"].add(canonical(s.with_(network=())))
        projections["leader_and_isr"].add(without(s, lambda m: m.kind == LEADER_AND_ISR))
        projections["answers"].add(without(s, lambda m: m.kind in ANSWERS))
        projections["alter_answers"].add(without(s, lambda m: m.kind == ALTER_PARTITION_RESPONSE))
        projections["noop_now"].add(without(s, lambda m, gone=noop: any(m is x for x in gone)))
        projections["dead"].add(without(s, lambda m, gone=dead: any(m is x for x in gone)))
        projections["retried"].add(without(s, lambda m: m.kind in ANSWERS and m.error
                                           in (NOT_LEADER, UNKNOWN_LEADER_EPOCH)))
        ghostless = s.with_(brokers=tuple([b.with_(incarnation=0, stale=False, reconciled=0,
                                                   idle_cause=0)
                                           for b in s.brokers]), committed=(), acked=())
        projections["ghosts"].add(canonical(ghostless))
    n = len(states)
    return {
        "states": n,
        "messages_in_flight_by_count": {str(k): v for k, v in sorted(sizes.items())},
        "messages_by_kind": dict(kinds),
        "noop_now_by_kind": dict(noop_kinds),
        "dead_by_kind": dict(dead_kinds),
        "distinct_after_dropping": {name: len(kept) for name, kept in projections.items()},
        "factor": {name: round(n / len(kept), 3) for name, kept in projections.items()},
    }


def level_sizes(model, depth: int, reduce: str) -> list[int]:
    """New orbits of each level (the initial states first) of the search to ``depth`` under
    ``--symmetry``."""
    from checker.bfs import LocalBFS
    from checker.search import SearchOptions

    engine = LocalBFS(model, SearchOptions(max_depth=depth, symmetry=True, reduce=reduce))
    sizes: list[int] = []
    commit = engine._commit

    def counted(st, level):
        sizes.append(level.count)
        return commit(st, level)

    engine._commit = counted
    engine.run()
    return sizes


def levels(model, depth: int) -> dict:
    started = time.process_time()
    full = level_sizes(model, depth, "none")
    full_cpu = time.process_time() - started
    reduced = level_sizes(model, depth, "dead")
    reduced_cpu = time.process_time() - started - full_cpu
    rows = []
    for d, (f, r) in enumerate(zip(full, reduced, strict=False)):
        cf, cr = sum(full[:d + 1]), sum(reduced[:d + 1])
        rows.append({"level": d, "full": f, "reduced": r, "factor": round(f / r, 3) if r else None,
                     "full_total": cf, "reduced_total": cr, "total_factor": round(cf / cr, 3)})
    return {"levels": rows, "cpu_seconds": {"full": round(full_cpu, 1),
                                            "reduced": round(reduced_cpu, 1)}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--protocol", default="2.1.0")
    parser.add_argument("--const", action="append", default=None, metavar="NAME=VALUE")
    parser.add_argument("--max-states", type=int, default=None)
    parser.add_argument("--json", metavar="FILE", help="also write the figures here")
    parser.add_argument("--levels", type=int, metavar="D", help="the level sizes to depth D, "
                                                                "without and with --reduce dead")
    args = parser.parse_args()
    constants = args.const or ["brokers=3", "records=1", "epochs=1", "crashes=0"]
    model = build_model("kafka", constants, args.protocol)
    if args.levels is not None:
        figures = levels(model, args.levels)
        print(f"kafka {args.protocol} {' '.join(constants)} --symmetry, new orbits a level (full / "
              "--reduce dead):")
        for row in figures["levels"]:
            print(f"  {row['level']:>3} {row['full']:>11,} {row['reduced']:>11,} "
                  f"{row['factor']:>6}x   total {row['full_total']:>11,} "
                  f"{row['reduced_total']:>11,} {row['total_factor']:>6}x")
        print(f"  CPU: {figures['cpu_seconds']['full']} s full, "
              f"{figures['cpu_seconds']['reduced']} s reduced")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({**figures, "protocol": args.protocol, "constants": constants}, f,
                          indent=1)
        return 0
    started = time.process_time()
    states = reachable(model, args.max_states, symmetry=True)
    figures = census(model, states)
    figures.update(protocol=args.protocol, constants=constants, max_states=args.max_states,
                   cpu_seconds=round(time.process_time() - started, 1))
    print(f"kafka {args.protocol} {' '.join(constants)} --symmetry: {figures['states']:,} states"
          f"{f' (first levels up to {args.max_states:,})' if args.max_states else ''}")
    print("  messages in flight a state (count: states): "
          + ", ".join(f"{k}: {v:,}" for k, v in figures["messages_in_flight_by_count"].items()))
    for label, key in (("in flight", "messages_by_kind"), ("no-op now", "noop_now_by_kind"),
                       ("dead", "dead_by_kind")):
        print(f"  {label} by kind: " + (", ".join(f"{k} {v:,}" for k, v in figures[key].items())
                                        or "none"))
    print("  distinct states after dropping (factor):")
    for name, count in figures["distinct_after_dropping"].items():
        print(f"    {name:<15} {count:>10,}  {figures['factor'][name]:.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
