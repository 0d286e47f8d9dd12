"""What each family of the Kafka model's steps reads outside its own broker (issue 35; stop 41): the
keys a memo of that family needs.

    python3 bench/family_reads.py [--goal a|b] [--depth D]

On every state a reduced search (``--symmetry --reduce dead``) expands to the goal's depth, each
family runs on a *recording view* of the state: every part outside the family's own broker (the
other brokers, the controller, the network, each counter and ghost) answers as the real one does and
notes the read (a field, an index, an iteration, a comparison). The families: the controller's own
steps (``control_plane.actions``), a broker's own steps (``control_plane.broker_actions``, broker i
real), and the deliveries (the whole ``_deliveries`` pass, which picks the oldest request of each
control channel from the network). Printed: each family's reads with how many of its calls made
them. The counts say what a recorded key must hold; they are not a proof
(``bench/delivery_memo.py``'s probe view is).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from typing import Any

GOALS = {
    "a": ("2.1.0", ["brokers=3", "records=1", "crashes=0"], 12),
    "b": ("kraft-4.1", ["brokers=3", "acks=-1", "min_isr=2", "unclean_shutdowns=1"], 8),
}


class Recording:
    """A part of the state that notes each read of it into ``reads`` (a set of (label, what))."""

    __slots__ = ("_value", "_label", "_reads")

    def __init__(self, value: Any, label: str, reads: set) -> None:
        object.__setattr__(self, "_value", value)
        object.__setattr__(self, "_label", label)
        object.__setattr__(self, "_reads", reads)

    def _note(self, what: str) -> Any:
        self._reads.add((self._label, what))
        return self._value

    def __getattr__(self, name: str) -> Any:
        return getattr(self._note(name), name)

    def __getitem__(self, k: Any) -> Any:
        return self._note("[index]" if not isinstance(k, slice) else "[slice]")[k]

    def __iter__(self) -> Any:
        return iter(self._note("iterate"))

    def __len__(self) -> int:
        return len(self._note("len"))

    def __bool__(self) -> bool:
        return bool(self._note("truth"))

    def __hash__(self) -> int:
        return hash(self._note("hash"))

    def __index__(self) -> int:
        return self._note("value").__index__()


def _binary(name: str) -> Any:
    def op(self: Recording, other: Any) -> Any:
        other = other._value if isinstance(other, Recording) else other
        return getattr(self._note("value"), name)(other)
    return op


for _name in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__add__", "__radd__",
              "__sub__", "__rsub__", "__contains__"):
    setattr(Recording, _name, _binary(_name))


def view(s: Any, own: int | None, reads: set) -> Any:
    """``s`` with every part but broker ``own`` recording its reads."""
    from spec.kafka.state import KafkaState

    brokers = tuple(b if k == own else Recording(b, "other broker", reads)
                    for k, b in enumerate(s.brokers))
    rest = [Recording(value, name, reads) for name, value in zip(KafkaState._fields[1:], s[1:],
                                                                 strict=True)]
    return tuple.__new__(KafkaState, (brokers, *rest))


def _own_steps(model: Any, i: int) -> Any:
    def run(s: Any, reads: set) -> None:
        model.control_plane.broker_actions(model, view(s, i, reads), i, [])
    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--goal", choices=sorted(GOALS), default="a")
    parser.add_argument("--depth", type=int)
    args = parser.parse_args()
    sys.path.insert(0, __file__.rsplit("/bench/", 1)[0])
    from reduced_levels import expanded_states

    from spec.registry import build_model

    protocol, constants, depth = GOALS[args.goal]
    model = build_model("kafka", constants, protocol)
    states = expanded_states(model, args.depth or depth)
    plane = model.control_plane
    families = {
        "controller's steps": lambda s, reads: plane.actions(model, view(s, None, reads), []),
        **{f"broker {i}'s own steps": _own_steps(model, i) for i in range(model.brokers)},
        "deliveries (the network's "
        "pass)": lambda s, reads: model._deliveries(view(s, None, reads), []),
    }
    print(f"{protocol} {' '.join(constants)}: {len(states):,} states expanded")
    for family, run in families.items():
        counts: Counter = Counter()
        for s in states:
            reads: set = set()
            run(s, reads)
            counts.update(reads)
        print(f"  {family}: " + ", ".join(f"{label}.{what} {n / len(states):.0%}"
                                          for (label, what), n in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
