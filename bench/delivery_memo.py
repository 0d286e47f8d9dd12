"""A memo of the Kafka model's deliveries, keyed by exactly what they read, end to end (issue 35;
stop 41).

    python3 bench/delivery_memo.py [--goal a|b] [--depth D] [--rounds 3] [--verify] [--instructions]

Every delivery of a message to a broker (ServeFetch, ReceiveFetch, ServeOffsetsForLeaderEpoch,
ReceiveOffsetsForLeaderEpoch, DeliverStopReplica and the control plane's DeliverLeaderAndIsr) is
remembered by (destination broker, message): the entry is the new destination broker (or none) and
the messages the step adds. The key is exact by construction: an entry is filled by running the
model's own rule on a *probe view* of the state in which the destination broker and the message are
real and everything else is poisoned (the other brokers, the controller, the counters and ghosts
raise on any read; the network is a view that allows only removing the delivered message). A rule
that reads anything else raises, and that key falls back to the rule for good. The successor is then
rebuilt from the real state: its network without the message plus the ones added, re-sorted.

The search (``--symmetry --reduce dead``, no invariant, to a fixed depth:
``bench/model_speed.py --goal``'s configurations) runs with and without the memo in fresh
interpreters, alternating; the counts must be equal. ``--verify`` also compares, on every state the
search expands, the (action, successor) list of the memoised model with the readable model's, in
order. ``--instructions``: callgrind's instructions a state generated (the search minus the same
process without it), as ``bench/model_speed.py``.

``--floor`` bounds what any memo on these records can reach: on the states the search expands, the
model's successors against the cost of a memo that knew every family's answer (guards included): a
successor is then one dictionary look-up keyed by a pair of parts (a broker and a message, hashed as
the delivery memo's key is) and the state rebuilt from its parts (the brokers tuple, the network
re-sorted, the rest copied). Best of 5, CPU seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from typing import Any

GOALS = {
    "a": ("2.1.0", ["brokers=3", "records=1", "crashes=0"], 12),
    "b": ("kraft-4.1", ["brokers=3", "acks=-1", "min_isr=2", "unclean_shutdowns=1"], 8),
}
#: the model's delivery rules that take (state, message) and change at most the message's
#: destination and the network
RULES = ("_serve_fetch_state", "_receive_fetch_state", "_serve_offsets_state",
         "_receive_offsets_state", "_apply_stop_replica")


class Touched(Exception):
    """A rule read a part of the state outside its key."""


def _touched(*_args: Any, **_kwargs: Any) -> Any:
    raise Touched()


class Poison:
    """A part of the probe view outside the key: any read of it raises."""

    __slots__ = ()
    __getattr__ = __getitem__ = __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _touched
    __hash__ = __len__ = __iter__ = __bool__ = __index__ = __int__ = __contains__ = _touched
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _touched


POISON = Poison()


class ProbeNetwork(tuple):
    """The network of a probe view, ``(m,)``: it allows ``remove_message(network, m)`` (``index``
    then the two slices around it, both empty) and nothing else."""

    def index(self, x: Any, *_args: Any) -> int:
        m = tuple.__getitem__(self, 0)
        if x is m or x == m:
            return 0
        raise Touched()

    def __getitem__(self, k: Any) -> Any:
        if isinstance(k, slice) and k.step is None and (
                (k.start is None and k.stop == 0) or (k.start == 1 and k.stop is None)):
            return ()
        raise Touched()

    __iter__ = __len__ = __contains__ = __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _touched  # noqa: E501
    __hash__ = __add__ = __radd__ = __mul__ = __rmul__ = count = __bool__ = _touched


FALLBACK = object()


def memoised(rule: Any, n: int) -> Any:
    """``rule(s, m)`` remembered by (destination broker, message), each entry from a probe view (see
    the module doc)."""
    from spec.kafka.state import KafkaState
    from spec.kafka.updates import remove_message

    new = tuple.__new__
    width = len(KafkaState._fields)
    table: dict = {}

    def probe(s: Any, m: Any, i: int) -> Any:
        brokers = [POISON] * n
        brokers[i] = s[0][i]
        view = new(KafkaState, (tuple(brokers), POISON, ProbeNetwork((m,))) + (POISON,)
                   * (width - 3))
        try:
            t = rule(view, m)
        except Touched:
            return FALLBACK
        if type(t) is not KafkaState or t[1] is not POISON or any(x is not POISON for x in t[3:]):
            return FALLBACK
        if (len(t[0]) != n or any(t[0][k] is not POISON for k in range(n) if k != i) or type(t[2])
            is not tuple):
            # (a network left as the view was: the message not removed, not this family's shape)
            return FALLBACK
        return (None if t[0][i] is s[0][i] else t[0][i]), t[2]

    def step(s: Any, m: Any) -> Any:
        i = m.dst
        brokers = s[0]
        key = (brokers[i], m)
        entry = table.get(key)
        if entry is None:
            entry = table[key] = probe(s, m, i)
        if entry is FALLBACK:
            return rule(s, m)
        broker, added = entry
        network = remove_message(s[2], m)
        if added:
            network = tuple(sorted(network + added))
        if broker is None:
            return new(KafkaState, (brokers, s[1], network) + s[3:])
        changed = list(brokers)
        changed[i] = broker
        return new(KafkaState, (tuple(changed), s[1], network) + s[3:])

    step.table = table
    return step


def with_memo(model: Any) -> dict:
    """Install the memo on ``model`` (its delivery rules and its control plane's LeaderAndIsr); the
    tables by name."""
    tables = {}
    for name in RULES:
        step = memoised(getattr(model, name), model.brokers)
        setattr(model, name, step)
        tables[name] = step.table
    plane = model.control_plane
    apply = plane.apply_leader_and_isr
    step = memoised(lambda s, m: apply(model, s, m), model.brokers)
    plane_class = type(plane)
    model.control_plane = type(plane_class.__name__, (plane_class,),
                               {"apply_leader_and_isr": staticmethod(
                                   lambda _model, s, m: step(s, m))})()
    tables["apply_leader_and_isr"] = step.table
    return tables


CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[2])
import delivery_memo
from spec.registry import build_model
from checker.bfs import check
from checker.search import SearchOptions
protocol, constants, depth, memo = sys.argv[3], json.loads(sys.argv[4]), int(sys.argv[5]), sys.argv[6] == "on"
model = build_model("kafka", constants, protocol)
tables = delivery_memo.with_memo(model) if memo else {}
if len(sys.argv) > 7:  # --instructions: the same process without the search
    print(json.dumps({"generated": 0}))
    sys.exit(0)
start = time.process_time()
r = check(model, SearchOptions(invariants=[], symmetry=True, reduce="dead", max_depth=depth))
cpu = time.process_time() - start
print(json.dumps({"distinct": r.distinct_states, "generated": r.states_generated, "depth": r.depth, "cpu": cpu,
                  "entries": sum(len(t) for t in tables.values()),
                  "fallbacks": sum(1 for t in tables.values() for e in t.values() if e is delivery_memo.FALLBACK)}))
"""  # noqa: E501


def _child(root: str, goal: tuple, memo: bool, valgrind: bool = False,
           skip: bool = False) -> tuple[dict, str]:
    protocol, constants, depth = goal
    command = [sys.executable, "-c", CHILD, root, os.path.dirname(os.path.abspath(__file__)),
               protocol, json.dumps(constants), str(depth), "on" if memo else "off",
               *(["skip"] if skip else [])]
    if valgrind:
        command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command]
    out = subprocess.run(command, capture_output=True, text=True, check=True, cwd=root)
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


def _instructions(root: str, goal: tuple, memo: bool) -> float:
    totals, generated = [], 0
    for skip in (True, False):
        result, err = _child(root, goal, memo, valgrind=True, skip=skip)
        totals.append(int(re.search(r"Collected : (\d+)", err).group(1)))
        generated = result["generated"] or generated
    return (totals[1] - totals[0]) / generated


def verify(goal: tuple) -> tuple[int, int, int]:
    """On every state a reduced search expands to the goal's depth: the memoised model's (action,
    successor) list equal to the readable model's, in order. (states compared, keys filled, keys
    that fell back to the rule)."""
    from checker.search import SearchOptions, search_canonical
    from spec.registry import build_model

    protocol, constants, depth = goal
    readable = build_model("kafka", constants, protocol)
    fast = build_model("kafka", constants, protocol)
    tables = with_memo(fast)
    form = search_canonical(readable, SearchOptions(symmetry=True, reduce="dead"))
    level = [form(s) for s in readable.init_states()]
    seen = set(level)
    compared = 0
    for _ in range(depth):
        following = []
        for s in level:
            expected = readable.successors(s)
            if fast.successors(s) != expected:
                raise SystemExit("delivery_memo: the memoised successors differ from the model's "
                                 f"at {s}")
            compared += 1
            for _, t in expected:
                image = form(t)
                if image not in seen:
                    seen.add(image)
                    following.append(image)
        level = following
    return (compared, sum(len(t) for t in tables.values()),
            sum(1 for t in tables.values() for entry in t.values() if entry is FALLBACK))


def floor(goal: tuple) -> tuple[int, float, float]:
    """(successors, us a successor by the model's rules, us a successor by a memo that knew every
    answer)."""
    import time

    from reduced_levels import expanded_states

    from spec.kafka.state import KafkaState
    from spec.registry import build_model

    protocol, constants, depth = goal
    model = build_model("kafka", constants, protocol)
    states = expanded_states(model, depth)
    new = tuple.__new__
    plan = [[(act, list(t[0]), t[1], list(t[2]), t[3:], (t[0][0], t[2][:1]))
             for act, t in model.successors(s)]
            for s in states]
    table = {key: act for rows in plan for act, *_, key in rows}

    def by_rules() -> int:
        return sum(len(model.successors(s)) for s in states)

    def by_memo() -> int:
        count = 0
        for rows in plan:
            out = [(table[key], new(KafkaState, (tuple(brokers), controller, tuple(sorted(network)))
                                    + rest))
                   for _act, brokers, controller, network, rest, key in rows]
            count += len(out)
        return count

    def best(run: Any) -> tuple[float, int]:
        times, count = [], 0
        for _ in range(5):
            start = time.process_time()
            count = run()
            times.append(time.process_time() - start)
        return min(times), count

    (rules, count), (memo, _) = best(by_rules), best(by_memo)
    return count, rules / count * 1e6, memo / count * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--goal", choices=sorted(GOALS), action="append",
                        help="a: 2.1.0 three brokers (records=1 crashes=0), b: kraft-4.1 at Last "
                             "Replica Standing's bounds; both by default")
    parser.add_argument("--depth", type=int, help="instead of the goal's (12 for a, 8 for b)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--verify", action="store_true", help="also compare the successors state "
                                                              "for state")
    parser.add_argument("--instructions", action="store_true", help="also count instructions a "
                                                                    "state (valgrind)")
    parser.add_argument("--floor", action="store_true",
                        help="only bound what a memo of every family on these records could reach "
                             "(see above)")
    args = parser.parse_args()
    if args.instructions and not shutil.which("valgrind"):
        print("delivery_memo: --instructions needs valgrind (callgrind)", file=sys.stderr)
        return 69
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
    sys.path.insert(0, root)
    print(f"load average at start {os.getloadavg()[0]:.2f}")
    for name in args.goal or sorted(GOALS):
        protocol, constants, depth = GOALS[name]
        goal = (protocol, constants, args.depth or depth)
        if args.floor:
            count, rules, memo = floor(goal)
            print(f"{name}: {protocol} {' '.join(constants)} depth {goal[2]}: {count:,} successors "
                  f"of the states expanded; the rules {rules:.2f} us a successor, a memo that knew "
                  f"every answer {memo:.2f} ({rules / memo:.1f}x)")
            continue
        if args.verify:
            compared, entries, fallbacks = verify(goal)
            print(f"{name}: {compared:,} states expanded, the memoised successors equal the "
                  f"model's on each ({entries:,} keys, {fallbacks} fell back to the rule)")
        runs: dict[bool, list[dict]] = {False: [], True: []}
        for _ in range(args.rounds):
            for memo in (False, True):
                runs[memo].append(_child(root, goal, memo)[0])
        off, on = runs[False][0], runs[True][0]
        if any((r["distinct"], r["generated"], r["depth"])
               != (off["distinct"], off["generated"], off["depth"])
               for r in runs[False] + runs[True]):
            print(f"delivery_memo: the counts differ: {runs}", file=sys.stderr)
            return 1
        us = {memo: sum(r["cpu"] for r in rs) / sum(r["generated"] for r in rs) * 1e6
              for memo, rs in runs.items()}
        print(f"{name}: {protocol} {' '.join(constants)} depth {goal[2]}: {off['distinct']:,} "
              f"orbits, {off['generated']:,} generated (equal both ways); CPU a state "
              f"{us[False]:.2f} us readable, {us[True]:.2f} us memoised "
              f"({us[True] / us[False]:.2f}); {on['entries']:,} entries, {on['fallbacks']} "
              "fallbacks")
        if args.instructions:
            readable, memoised_ = _instructions(root, goal, False), _instructions(root, goal, True)
            print(f"{name}: instructions a state {readable:,.0f} readable, {memoised_:,.0f} "
                  f"memoised ({memoised_ / readable:.2f})")
    print(f"load average at end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
