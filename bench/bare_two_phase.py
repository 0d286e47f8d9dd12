"""The ceiling: a bare hand-written breadth-first search of TwoPhase.tla (tuples, a set, no
framework, no invariant, no parent pointers), the least a Python checker can do for this model.

    python bench/bare_two_phase.py 7    ->    296448 2744706 23 <seconds>
"""

from __future__ import annotations

import sys
import time

WORKING, PREPARED, COMMITTED, ABORTED = 0, 1, 2, 3


def bare(n: int) -> tuple[int, int, int]:
    init = ((WORKING,) * n, 0, (False,) * n, (False,) * n, False, False)
    seen = {init}
    frontier = [init]
    generated, depth = 1, 1
    while frontier:
        following = []
        for s in frontier:
            rm, tm, tp, mp, mc, ma = s
            succs = []
            tm_init = tm == 0
            if tm_init and all(tp):
                succs.append((rm, 1, tp, mp, True, ma))
            if tm_init:
                succs.append((rm, 1, tp, mp, mc, True))
            for i in range(n):
                if tm_init and mp[i]:
                    succs.append((rm, tm, tp[:i] + (True,) + tp[i + 1 :], mp, mc, ma))
                if rm[i] == WORKING:
                    succs.append((rm[:i] + (PREPARED,) + rm[i + 1 :], tm, tp, mp[:i] + (True,)
                                  + mp[i + 1 :], mc, ma))
                    succs.append((rm[:i] + (ABORTED,) + rm[i + 1 :], tm, tp, mp, mc, ma))
                if mc:
                    succs.append((rm[:i] + (COMMITTED,) + rm[i + 1 :], tm, tp, mp, mc, ma))
                if ma:
                    succs.append((rm[:i] + (ABORTED,) + rm[i + 1 :], tm, tp, mp, mc, ma))
            generated += len(succs)
            for t in succs:
                if t not in seen:
                    seen.add(t)
                    following.append(t)
        if following:
            depth += 1
        frontier = following
    return len(seen), generated, depth


if __name__ == "__main__":
    started = time.perf_counter()
    distinct, generated, depth = bare(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
    print(distinct, generated, depth, round(time.perf_counter() - started, 3))
