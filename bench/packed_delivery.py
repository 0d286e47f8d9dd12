"""What a packed state and a transition table would save on one family of the Kafka model (issue
35).

    python3 bench/packed_delivery.py [--depth 12]

On the 2.1.0 three-broker goal configuration (records=1 crashes=0), every state the reduced search
(``--symmetry --reduce dead``) expands up to ``--depth`` levels, and every FetchResponse in flight
in them, delivered three ways, each timed alone (best of 5, CPU seconds):

* the rule, as the model runs it (``KafkaModel._receive_fetch_state``, a new ``KafkaState`` of
  nested records);
* a table by (follower, answer), the delta read off the rule's first result (the new follower, the
  messages added and removed), the successor rebuilt as nested records;
* packed states: each broker, message and network interned to an int, a state a row of ints, the
  table keyed by (follower id, answer id) and the network's change by (network id, change id).

Every tabled successor is checked equal to the rule's, and the packed tables are filled from the
rule's successors (a conflicting entry stops the run); the packed rows time the look-ups and the row
a packed successor costs. The figures say what the representation costs, not what a kernel would
reach.
"""

from __future__ import annotations

import argparse
import time

from reduced_levels import expanded_states

from spec.kafka.state import FETCH_RESPONSE, KafkaState
from spec.registry import build_model

_new = tuple.__new__


def _best(run) -> float:
    times = []
    for _ in range(5):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--depth", type=int, default=12)
    args = parser.parse_args()
    model = build_model("kafka", ["brokers=3", "records=1", "crashes=0"], "2.1.0")
    states = expanded_states(model, args.depth)
    pairs = [(s, m) for s in states for m in s.network if m.kind == FETCH_RESPONSE]
    receive = model._receive_fetch_state

    def rule() -> list:
        return [receive(s, m) for s, m in pairs]

    table: dict = {}

    def tabled() -> list:
        out = []
        for s, m in pairs:
            dst = m.dst
            key = (s[0][dst], m)
            delta = table.get(key)
            if delta is None:
                t = receive(s, m)
                if (any(t[0][i] != s[0][i] for i in range(len(s[0])) if i != dst) or t[1] != s[1]
                    or t[3:] != s[3:]):
                    raise SystemExit("a FetchResponse changed more than its follower and the "
                                     "network: no table")
                delta = table[key] = (t[0][dst], [x for x in t[2] if x not in s[2]],
                                      [x for x in s[2] if x not in t[2]])
            follower, added, removed = delta
            brokers = list(s[0])
            brokers[dst] = follower
            network = [x for x in s[2] if x not in removed]
            if added:
                network = sorted(network + added)
            fields = list(s)
            fields[0] = tuple(brokers)
            fields[2] = tuple(network)
            out.append(_new(KafkaState, fields))
        return out

    successors = rule()
    if tabled() != successors or tabled() != successors:
        raise SystemExit("the table's successors are not the rule's")
    ids: dict = {}

    def intern(value) -> int:
        return ids.setdefault(value, len(ids))

    packed = [(tuple([intern(b) for b in s[0]]) + (intern(s[1]), intern(s[2])) + tuple(s[3:]),
               intern(m), m.dst)
              for s, m in pairs]
    brokers_n = len(states[0][0])
    step: dict = {}
    networks: dict = {}
    for (row, answer, dst), (s, m), t in zip(packed, pairs, successors, strict=True):
        _, added, removed = table[(s[0][dst], m)]
        change = step.setdefault((row[dst], answer),
                                 (intern(t[0][dst]), intern((tuple(added), tuple(removed)))))
        if networks.setdefault((row[brokers_n + 1], change[1]), intern(t[2])) != intern(t[2]):
            raise SystemExit("a network's change is not a function of the network and the delta")

    def packed_run() -> list:
        out = []
        net = brokers_n + 1
        for row, answer, dst in packed:
            follower, change = step[(row[dst], answer)]
            new = list(row)
            new[dst] = follower
            new[net] = networks[(row[net], change)]
            out.append(tuple(new))
        return out

    n = len(pairs)
    print(f"{len(states):,} states expanded, {n:,} FetchResponse deliveries, {len(table):,} "
          "distinct (follower, answer)")
    print(f"us a delivery: the rule {1e6 * _best(rule) / n:.2f}, a table on records "
          f"{1e6 * _best(tabled) / n:.2f}, a table on packed rows "
          f"{1e6 * _best(packed_run) / n:.2f}")
    print("us a fingerprint: the state "
          f"{1e6 * _best(lambda: [hash(s) for s, _ in pairs]) / n:.2f}, its packed row "
          f"{1e6 * _best(lambda: [hash(row) for row, _, _ in packed]) / n:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
