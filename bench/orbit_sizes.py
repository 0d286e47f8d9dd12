"""Why symmetry keeps the states it keeps: the orbits of a Kafka configuration's reachable states.

    python3 bench/orbit_sizes.py                                  # 2.1.0, brokers=3 records=1 epochs=0 crashes=1
    python3 bench/orbit_sizes.py --protocol 4.1.0 --const brokers=3 --const records=1 --const epochs=1 \
        --const crashes=0 --max-states 200000 [--json FILE]

Runs the unreduced breadth-first search (bounded by ``--max-states`` at a level's end, if given) and
groups its states R by ``model.canonical``. For each orbit met it reports:

* the orbit's size under every renaming of the brokers (n! divided by the renamings that leave the
  state as it is: a state whose brokers 1 and 2 look alike has an orbit of 3 on three brokers);
* how many of its members R holds.

The reduction factor, |R| / orbits met, is the mean number of members R holds an orbit. It falls
short of n! for two reasons, told apart here: orbits smaller than n! (states that some renaming
leaves as they are: brokers that look alike), which no canonical form can reduce further; and
members of an orbit that R lacks (the initial state names broker 0 the leader of epoch 0, so R holds
only the renamings of a state that a run starting there reaches), which leave the orbits count as it
is: they are states the unreduced search does not visit either. It also checks, on every state of R,
that the canonical form is the same for every renaming (an inexact form would leave an orbit in
several pieces and reduce less than it could).
"""  # noqa: E501

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from itertools import permutations

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

from checker import bfs  # noqa: E402
from checker.search import SearchOptions  # noqa: E402
from spec.registry import build_model  # noqa: E402


def reachable(model, max_states: int | None, symmetry: bool = False) -> list:
    engine = bfs.LocalBFS(model, SearchOptions(max_states=max_states, symmetry=symmetry))
    seen: list = []
    original = engine._check_invariants

    def collect(st, states, base):
        seen.extend(states)
        return original(st, states, base)

    engine._check_invariants = collect
    engine.run()
    return seen


def analyse(model, states: list) -> dict:
    from spec.kafka.symmetry import permute

    n = len(states[0].brokers)
    perms = list(permutations(range(n)))
    members: Counter = Counter()
    inexact = 0
    for s in states:
        c = model.canonical(s)
        members[c] += 1
        if any(model.canonical(permute(s, p)) != c for p in perms[1:]):
            inexact += 1
    sizes = Counter()  # orbit size under S_n -> orbits
    held = Counter()  # (orbit size, members R holds) -> orbits
    for c, count in members.items():
        size = len({permute(c, p) for p in perms})
        sizes[size] += 1
        held[size, count] += 1
    orbits = len(members)
    full = sum(size * k for size, k in sizes.items())
    return {
        "states": len(states), "orbits": orbits, "reduction": len(states) / orbits,
        "group": len(perms), "inexact_states": inexact,
        "orbit_sizes": {str(size): k for size, k in sorted(sizes.items())},
        "members_held": {f"{size}:{count}": k for (size, count), k in sorted(held.items())},
        "mean_orbit_size": full / orbits,
        "states_if_every_member_were_reachable": full,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--protocol", default="2.1.0")
    parser.add_argument("--const", action="append", default=None, metavar="NAME=VALUE")
    parser.add_argument("--max-states", type=int, default=None)
    parser.add_argument("--json", metavar="FILE", help="also write the figures here")
    args = parser.parse_args()
    constants = args.const or ["brokers=3", "records=1", "epochs=0", "crashes=1"]
    model = build_model("kafka", constants, args.protocol)
    started = time.process_time()
    states = reachable(model, args.max_states)
    figures = analyse(model, states)
    # the reduced search's own count, when the unreduced one was complete (bounded, it stops at
    # other levels)
    reduced = None if args.max_states else len(reachable(model, None, symmetry=True))
    figures.update(protocol=args.protocol, constants=constants, reduced_search_orbits=reduced,
                   cpu_seconds=round(time.process_time() - started, 1), max_states=args.max_states)
    print(f"kafka {args.protocol} {' '.join(constants)}"
          f"{f' (first levels up to {args.max_states:,} states)' if args.max_states else ''}")
    print(f"  reachable states {figures['states']:,}; orbits met {figures['orbits']:,} (the "
          "reduced search: "
          f"{f'{reduced:,}' if reduced is not None else 'not run, the unreduced one was bounded'}); reduction {figures['reduction']:.2f} of {figures['group']}")  # noqa: E501
    print(f"  states whose renamings have another canonical form: {figures['inexact_states']}")
    print(f"  mean orbit size {figures['mean_orbit_size']:.2f}: the most any canonical form could "
          "reduce these orbits by (their members, all reachable: "
          f"{figures['states_if_every_member_were_reachable']:,} states)")
    print("  orbits by size (size: orbits): "
          + ", ".join(f"{k}: {v:,}" for k, v in figures["orbit_sizes"].items()))
    print("  orbits by size and members reached (size:members: orbits): "
          + ", ".join(f"{k}: {v:,}" for k, v in figures["members_held"].items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
