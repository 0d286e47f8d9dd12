"""The action footprints (``spec.kafka.footprints``) are checked against the model itself: every action run on
reachable states of every protocol row changes only what it declares it writes; an enabled action's declared
necessary conditions hold; a condition changes value only when something it reads changed; and two actions the
footprints call independent commute and neither disables the other (one may enable the other, as a send enables
its delivery, only by writing what the other's necessary condition reads: the stubborn set then takes it in). A
wrong declaration fails these checks (``test_a_wrong_declaration_is_caught``)."""

from __future__ import annotations

import random
from collections import deque
from dataclasses import replace

import pytest

import spec.kafka  # noqa: F401 - registers the model and its invariants
from checker.por import Reduction
from spec.kafka import footprints as fp
from spec.kafka.protocols import RELEASES
from spec.registry import build_model

ZK_BOUNDS = ["brokers=2", "records=2", "epochs=2", "crashes=1", "bumps=1", "shutdowns=1", "bounces=1", "losses=1"]
KRAFT_BOUNDS = ["brokers=3", "records=1", "epochs=2", "crashes=1", "shutdowns=1", "unclean_shutdowns=1", "alter_losses=1",
                "clean_shutdowns=1", "fences=1",
                "acks=-1", "min_isr=2"]
#: every protocol row at small bounds with every fault on, and a few switches and clients
CONFIGS = [(r.name, [], KRAFT_BOUNDS if r.features.kraft else ZK_BOUNDS) for r in RELEASES] + [
    ("0.10.2", ["lossy-crash=on"], ["brokers=2", "records=2", "crashes=1"]),
    ("2.8.0", ["unclean=on"], ["brokers=3", "records=1", "crashes=1"]),
    ("2.1.0", [], ["brokers=2", "records=1", "crashes=1", "inflight=1", "acks=-1", "consumers=1"]),
    ("3.4.1", [], ["brokers=2", "records=2", "crashes=1", "acks=1"]),
    # partition reassignment (spec.kafka.actions_reassignment): a replica removed and added back, moved among three
    ("kraft-3.5", [], ["brokers=2", "records=1", "crashes=1", "reassignments=2", "min_isr=2"]),
    ("kraft-4.1", [], ["brokers=3", "records=1", "crashes=1", "reassignments=2", "fences=1", "min_isr=2"]),
]
#: the rows of the fast test (the others run in the slow one)
FAST = {"0.10.2", "2.1.0", "2.8.1", "kraft-3.5"}


def sample_states(model, bfs_states: int, walks: int, depth: int, seed: int) -> list:
    """The first ``bfs_states`` states breadth-first, then the states of seeded random walks (deep states)."""
    seen: dict = {}
    queue = deque(model.init_states())
    while queue and len(seen) < bfs_states:
        state = queue.popleft()
        if state in seen:
            continue
        seen[state] = None
        queue.extend(t for _, t in model.successors(state))
    rng = random.Random(seed)
    for _ in range(walks):
        state = rng.choice(model.init_states())
        for _ in range(depth):
            succs = model.successors(state)
            if not succs:
                break
            state = rng.choice(succs)[1]
            seen.setdefault(state, None)
    return list(seen)


def problems(model, states: list, pairs: bool = True) -> list[str]:
    """Every disagreement between the declared footprints and what the actions do on ``states``."""
    table = model.reduction()
    reduction = Reduction(model, [])
    out: list[str] = []

    memo: dict = {}

    def by_key(state) -> dict:
        succs = memo.get(state)
        if succs is None:
            succs = memo[state] = {}
            for act, t in model.successors(state):
                succs.setdefault(table.key(act), set()).add(t)
        return succs

    narrowed = [(key, d.params, condition, reads, keeps) for key in table.keys for d in [table.declared[key]]
                for condition, reads, _, _, keeps, _ in table.narrowed.get(key, ())]
    for s in states:
        succs = by_key(s)
        narrow = {key: table.narrower(key, s) for key in succs}  # state-dependent footprints (footprints.NARROWER)
        for key, targets in succs.items():
            if narrow[key] is not None:  # what it changes where its state-dependent footprint applies
                for t in targets:
                    undeclared = fp.changed(s, t) - narrow[key][3]
                    if undeclared:
                        out.append(f"{key} writes {sorted(undeclared)} its state-dependent footprint does not declare")
            for t in targets:
                # a state-dependent footprint's condition stops holding only by a write of what it declares it reads,
                # by an action it does not declare keeps it (what the reduction relies on; it may start to hold
                # otherwise, as a send fills an empty channel)
                changed = fp.changed(s, t)
                for other, params, condition, reads, keeps in narrowed:
                    if condition.holds(model, s, params) and not condition.holds(model, t, params):
                        if not changed & reads:
                            out.append(f"{other}'s state-dependent condition '{condition.what}' changed by {key}, "
                                       "which writes nothing it reads")
                        elif key[0] in keeps:
                            out.append(f"{other}'s state-dependent condition '{condition.what}' falsified by {key}, "
                                       "which it declares keeps it")
            declared = table.declared[key]
            for conjunct, _ in declared.guard:
                if not conjunct.holds(model, s, declared.params):
                    out.append(f"{key} enabled but its necessary condition '{conjunct.what}' is false")
            for t in targets:
                undeclared = fp.changed(s, t) - table.writes(key)
                if undeclared:
                    out.append(f"{key} writes {sorted(undeclared)} it does not declare")
                changed = fp.changed(s, t)
                for other in table.keys:
                    d = table.declared[other]
                    for conjunct, reads in d.guard:
                        if not changed & reads and conjunct.holds(model, s, d.params) != conjunct.holds(model, t, d.params):
                            out.append(f"{other}'s condition '{conjunct.what}' changed by {key}, which writes nothing it reads")
        if not pairs:
            continue
        index = reduction.index
        for a, a_targets in succs.items():
            dependent = reduction.dependent_in(index[a], s)  # the state-dependent footprint where one applies
            a_writes = narrow[a][3] if narrow[a] is not None else table.writes(a)
            for b in table.keys:
                if b == a or dependent >> index[b] & 1:
                    continue
                after_a = [by_key(t).get(b, set()) for t in a_targets]
                if b not in succs:
                    # an independent action may enable b (a send its delivery) only through what b's necessary
                    # condition reads, so that a stubborn set holding the disabled b holds its enablers too
                    if any(after_a) and not table.necessary(b, s) & a_writes:
                        out.append(f"{a} enables {b} but writes nothing its necessary condition reads")
                    continue
                if not all(after_a):
                    out.append(f"{a} disables {b} although they are declared independent")
                    continue
                after_b = set().union(*(by_key(t).get(a, set()) for t in succs[b]))
                if set().union(*after_a) != after_b:
                    out.append(f"{a} and {b} are declared independent but do not commute")
    return sorted(set(out))


def _model(protocol: str, flags: list[str], bounds: list[str]):
    return build_model("kafka", bounds, protocol, flags)


@pytest.mark.parametrize("protocol,flags,bounds", [c for c in CONFIGS if c[0] in FAST and not c[1]])
def test_footprints_agree_with_the_actions(protocol, flags, bounds):
    model = _model(protocol, flags, bounds)
    assert problems(model, sample_states(model, 250, 12, 40, seed=1)) == []


@pytest.mark.slow
@pytest.mark.parametrize("protocol,flags,bounds", [c for c in CONFIGS if c[0] not in FAST or c[1]])
def test_footprints_agree_with_the_actions_on_every_row(protocol, flags, bounds):
    model = _model(protocol, flags, bounds)
    assert problems(model, sample_states(model, 400, 30, 50, seed=2)) == []


def test_every_action_of_every_row_has_a_footprint():
    """Every action the model yields on the sampled states of every configuration has a declared key."""
    for protocol, flags, bounds in CONFIGS:
        model = _model(protocol, flags, bounds)
        table = model.reduction()
        for state in sample_states(model, 150, 4, 30, seed=3):
            for act, _ in model.successors(state):
                assert table.key(act) in table.declared, act


def _drop(name: str, where: str, resource_kind: str, values: tuple[str, ...]):
    """The footprint table with one declaration of ``name`` narrowed: its templates of ``where`` (reads, writes)
    without the resources of ``resource_kind`` that name one of ``values``."""
    out = []
    for f in fp.FOOTPRINTS:
        if f.name == name and not f.universal:
            templates = []
            for t in getattr(f, where):
                if isinstance(t, fp.When):
                    templates.append(t)
                    continue
                templates.append(lambda p, n, k, t=t: [r for r in t(p, n, k)
                                                       if not (r[0] == resource_kind and set(values) & set(r))])
            f = replace(f, **{where: tuple(templates)})
        out.append(f)
    return tuple(out)


@pytest.mark.parametrize("name,where,kind,values,expected", [
    ("ServeFetch", "writes", "b", ("remote",), "writes [('b', 0, 'remote', 1)]"),  # the leader's record of its follower's LEO
    ("Produce", "writes", "s", ("produced",), "writes [('s', 'produced')]"),
    ("ServeFetch", "reads", "b", ("log", "cache"), "do not commute"),  # a record produced meanwhile is in the answer
])
def test_a_wrong_declaration_is_caught(monkeypatch, name, where, kind, values, expected):
    monkeypatch.setattr(fp, "FOOTPRINTS", _drop(name, where, kind, values))
    model = _model("2.1.0", [], ["brokers=2", "records=1", "crashes=1"])
    found = problems(model, sample_states(model, 250, 12, 40, seed=1))
    assert any(expected in p for p in found), found


def test_a_wrong_necessary_condition_is_caught(monkeypatch):
    """A condition that is false while the action is enabled, and one that reads less than it depends on."""
    never = fp.Conjunct("never", fp.B("leader", "alive"), lambda m, s, p: False)
    blind = fp.Conjunct("follower busy", fp.B("follower", "alive"),
                        lambda m, s, p: fp.busy(s.network, p["follower"], p["leader"]))
    table = tuple(replace(f, guard=(*f.guard, never)) if f.name == "Produce" else
                  replace(f, guard=(blind,)) if f.name == "ServeFetch" else f for f in fp.FOOTPRINTS)
    monkeypatch.setattr(fp, "FOOTPRINTS", table)
    model = _model("2.1.0", [], ["brokers=2", "records=1", "crashes=1"])
    found = problems(model, sample_states(model, 200, 8, 30, seed=1), pairs=False)
    assert any("Produce" in p and "'never' is false" in p for p in found), found
    assert any("'follower busy' changed by" in p for p in found), found


def _narrowed(name: str, **change):
    """The state-dependent footprints with the entry of ``name`` changed."""
    return tuple(replace(f, **change) if f.name == name else f for f in fp.NARROWER)


TWO = ["brokers=2", "records=1", "crashes=1"]
#: a LeaderAndIsr reaches a follower before its leader (the follower's fetch is then UNKNOWN_LEADER_EPOCH until it does)
THREE = ["brokers=3", "records=1", "crashes=0", "epochs=1"]


@pytest.mark.parametrize("name,change,bounds,expected", [
    # every answer taken as one the follower drops: an answer with records writes the follower's log
    ("ReceiveFetch", {"condition": fp._only_retried("fetch_resp", "follower", "leader", lambda m, a: True)}, TWO,
     "its state-dependent footprint does not declare"),
    # an errored fetch served without its answer declared
    ("ServeFetch", {"writes": (fp.NET("fetch", "follower", "leader"),)}, TWO, "its state-dependent footprint does not declare"),
    # the condition without the leader's epoch: the LeaderAndIsr that makes the leader's epoch the request's ends it
    ("ServeFetch", {"condition": replace(fp._served_an_error("fetch"), reads=fp.NET("fetch", "follower", "leader"))}, THREE,
     "state-dependent condition 'the fetch request gets an error' changed by ('DeliverLeaderAndIsr'"),
    # a fetch served can bring the follower's LEO, as the leader knows it, up to the leader's: it does not keep it
    ("ShrinkIsr", {"keeps": ("Produce", "ServeFetch")}, TWO, "falsified by ('ServeFetch'"),
    # every LeaderAndIsr taken as ignored: one applied writes the broker's leader and epoch
    ("DeliverLeaderAndIsr", {"condition": replace(fp._ignored_leader_and_isr(), holds=lambda m, s, p: True)}, TWO,
     "its state-dependent footprint does not declare"),
])
def test_a_wrong_state_dependent_footprint_is_caught(monkeypatch, name, change, bounds, expected):
    monkeypatch.setattr(fp, "NARROWER", _narrowed(name, **change))
    model = _model("2.1.0", [], bounds)
    found = problems(model, sample_states(model, 250, 12, 40, seed=1), pairs=bounds is TWO)
    assert any(expected in p for p in found), found


def test_state_dependent_footprints_apply_on_sampled_states():
    """Each entry of ``NARROWER`` holds somewhere on the fast rows' samples (a check of nothing would pass anyway)."""
    used: set = set()
    for protocol, flags, bounds in [c for c in CONFIGS if c[0] in FAST and not c[1]]:
        model = _model(protocol, flags, bounds)
        table = model.reduction()
        for s in sample_states(model, 250, 12, 40, seed=1):
            for act, _ in model.successors(s):
                key = table.key(act)
                for condition, *_ in table.narrowed.get(key, ()):
                    if condition.holds(model, s, table.declared[key].params):
                        used.add((act.name, condition.what))
    assert used == {(f.name, f.condition.what) for f in fp.NARROWER}, used
