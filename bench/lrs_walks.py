"""Why uniform random walks miss Last Replica Standing on three brokers (kraft-3.5, acks=-1,
min_isr=2, one unclean shutdown, epochs=4: the least leader-epoch bound the story fits in, see
tests/test_simulate.py).

    python3 bench/lrs_walks.py [--walks 5000] [--depth 50] [--seed 0] [--json FILE]
    python3 bench/lrs_walks.py --compare [--seeds 10] [--walks 5000]

Part 1 replays the story (``tests.test_simulate.LRS_STORY``), shortens it with
``checker.simulate.shorten`` and, for each step of the shortened trace, counts the actions enabled
in the state it leaves and how many of them spend a bound (their successor has used more of a
budget: crashes, unclean shutdowns, AlterPartitions or leader epochs).

Part 2 runs ``--walks`` uniform walks as ``kmc simulate`` does (walk i seeded
``walk_seed(seed, i)``, one enabled action taken uniformly at each step, ``--depth`` steps at most)
and follows each to its first acknowledged record: how many walks acknowledge one, at which step,
and how much of each budget is left then; and how many reach a state where the acknowledged record's
only ISR member has not yet shut down uncleanly (the state the story's last five steps start from).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import time
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

from checker.simulate import shorten, walk_seed  # noqa: E402
from invariants.registry import for_family  # noqa: E402
from spec.registry import build_model  # noqa: E402
from tests.test_simulate import LRS_STORY, LRS_THREE_BROKERS  # noqa: E402
from traces.replay import replay  # noqa: E402
from traces.scenario import StepSpec  # noqa: E402

CONSTANTS = [*LRS_THREE_BROKERS, "epochs=4"]


def spent(state) -> tuple[int, int, int, int]:
    """The budgets a state has used: crashes, unclean shutdowns, AlterPartitions, leader epochs."""
    return state.crashes, state.unclean_shutdowns, state.alters, state.controller.epoch


def enabled_along_the_story(model, invariant) -> dict:
    walked = replay(model, [StepSpec(name, tuple(params.items())) for name, params in LRS_STORY],
                    invariants=[invariant])
    short = shorten(model, walked.trace, invariant)
    rows = []
    state = short.initial
    for step in short.steps:
        successors = [(act, succ) for act, succ in model.successors(state)
                      if model.within_bounds(succ)]
        spending = [act for act, succ in successors if spent(succ) != spent(state)]
        rows.append({"action": str(step.action), "enabled": len(successors),
                     "spending_a_bound": len(spending),
                     "kinds": dict(sorted(Counter(act.name for act, _ in successors).items()))})
        state = step.state
    return {"walked": walked.trace.length, "shortened": short.length, "steps": rows,
            "mean_enabled": sum(r["enabled"] for r in rows) / len(rows),
            "mean_spending": sum(r["spending_a_bound"] for r in rows) / len(rows)}


def uniform_walks(model, invariant, walks: int, depth: int, seed: int) -> dict:
    init = model.init_states()[0]
    acked_walks, lone_member_walks, violated = 0, 0, 0
    first_ack_step: Counter = Counter()
    left_at_ack: Counter = Counter()
    limits = (model.constants["crashes"], model.constants["unclean_shutdowns"],
              model.constants["alters"], model.constants["epochs"])
    started = time.monotonic()
    for walk in range(walks):
        rng = random.Random(walk_seed(seed, walk))
        state, acked, lone = init, False, False
        for step in range(depth + 1):
            if state.acked and not acked:
                acked = True
                first_ack_step[min(step // 10 * 10, 40)] += 1
                left = tuple(limit - used for limit, used in zip(limits, spent(state), strict=True))
                left_at_ack["every budget left" if all(left) else "some budget used up"] += 1
            if state.acked and len(state.controller.isr) == 1 and not state.unclean_shutdowns:
                lone = True
            if not invariant.holds(state):
                violated += 1
                break
            if step == depth:
                break
            successors = [(act, succ) for act, succ in model.successors(state)
                          if model.within_bounds(succ)]
            if not successors:
                break
            _act, state = rng.choice(successors)
        acked_walks += acked
        lone_member_walks += lone
    return {"walks": walks, "depth": depth, "seed": seed,
            "seconds": round(time.monotonic() - started, 1),
            "walks_acknowledging_a_record": acked_walks,
            "first_acknowledgement_by_step_decade": {f"{k}-{k + 9}" if k < 40 else "40+": v
        for k, v in sorted(first_ack_step.items())},
            "budgets_at_first_acknowledgement": dict(left_at_ack),
            "walks_reaching_an_acknowledged_lone_isr_member_before_any_unclean_shutdown": lone_member_walks,  # noqa: E501
            "walks_violating": violated}


def kind_weight(config: str, seed: int, name: str) -> float:
    """The weight of action kind ``name`` in the walk seeded ``seed`` under configuration
    ``config``."""
    if config == "uniform":
        return 1.0
    u = int.from_bytes(hashlib.blake2b(f"{seed}/{name}".encode(), digest_size=8).digest(),
                       "big") / 2.0**64
    return (1.0 if u < 0.5 else 0.0) if config == "omit" else 2.0 ** (-8 * u)


def walks_to_violation(model, invariant, config: str, walks: int, depth: int,
                       seed: int) -> int | None:
    """The number of walks (seeds ``walk_seed(seed, i)``) up to and including the first that
    violates ``invariant``."""
    init = model.init_states()[0]
    for walk in range(walks):
        wseed = walk_seed(seed, walk)
        rng = random.Random(wseed)
        weights: dict[str, float] = {}
        state = init
        for _step in range(depth):
            successors = [(act, succ) for act, succ in model.successors(state)
                          if model.within_bounds(succ)]
            weighted = [(pair,
                         weights.setdefault(pair[0].name, kind_weight(config, wseed, pair[0].name)))
                        for pair in successors]
            weighted = [(pair, w) for pair, w in weighted if w > 0]
            if not weighted:
                break
            if config == "uniform":
                _act, state = rng.choice([pair for pair, _w in weighted])
            else:
                _act, state = rng.choices([pair for pair, _w in weighted],
                                          [w for _pair, w in weighted])[0]
            if not invariant.holds(state):
                return walk + 1
    return None


def compare(seeds: int, walks: int, depth: int) -> dict:
    targets = {"kafka-7786": (build_model("kafka",
                                          ["records=1", "epochs=2", "bumps=2", "crashes=0"],
                                          "2.1.0"),
                              for_family("kafka")["no-fence-stall"]),
               "last-replica-standing": (build_model("kafka", CONSTANTS, "kraft-3.5"),
                                         for_family("kafka")["acknowledged-durable"])}
    out: dict = {}
    for target, (model, invariant) in targets.items():
        for config in ("uniform", "omit", "weights"):
            started = time.monotonic()
            found = [walks_to_violation(model, invariant, config, walks, depth, seed)
                     for seed in range(seeds)]
            out[f"{target} {config}"] = {"walks_to_first_violation": found,
                                         "seconds": round(time.monotonic() - started, 1)}
            print(f"{target:22s} {config:8s} walks to the first violation, seeds 0-{seeds - 1}: "
                  f"{found} ({out[f'{target} {config}']['seconds']} s)", flush=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--walks", type=int, default=5000)
    parser.add_argument("--depth", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--compare", action="store_true", help="walks to the first violation by "
                                                               "walk configuration")
    parser.add_argument("--seeds", type=int, default=10)
    args = parser.parse_args()
    if args.compare:
        figures = compare(args.seeds, args.walks, args.depth)
        if args.json:
            with open(args.json, "w") as out:
                json.dump(figures, out, indent=1)
        return 0
    model = build_model("kafka", CONSTANTS, "kraft-3.5")
    invariant = for_family("kafka")["acknowledged-durable"]
    story = enabled_along_the_story(model, invariant)
    print(f"kraft-3.5 {' '.join(CONSTANTS)}: the story walked in {story['walked']} steps, "
          f"shortened to {story['shortened']}; {story['mean_enabled']:.1f} actions enabled a step "
          f"on average, {story['mean_spending']:.1f} of them spending a bound")
    for row in story["steps"]:
        print(f"  {row['action']:44s} {row['enabled']:3d} enabled, {row['spending_a_bound']} "
              "spending a bound")
    walks = uniform_walks(model, invariant, args.walks, args.depth, args.seed)
    for key, value in walks.items():
        print(f"{key}: {value}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"constants": CONSTANTS, "story": story, "uniform_walks": walks}, out,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
