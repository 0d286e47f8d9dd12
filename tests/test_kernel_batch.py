"""The kernel a batch at a time (``checker.kernel_batch``, what the Spark executors run) is the readable model.

On reachable states of small configurations, ``km_expand_batch``'s successors are the readable model's, state
for state, in its order, canonical under symmetry, with its action codes; each state's violation mask is the
readable invariants' verdict; the fingerprint set keeps exactly the first occurrences; and a library shipped as
bytes loads in a process that lacks it. A kernel with one rule changed fails the same check.
"""

from __future__ import annotations

import numpy as np
import pytest

from checker import kernel as km
from checker.kernel_batch import BatchKernel, FingerprintSet, Shipment, batch_kernel
from invariants.registry import for_family
from tests.test_kernel import TLA_SMALL, model_of, needs_cc, reachable

CONFIGS = [("two-phase", {"RM": 4}, True), ("two-phase", {"RM": 3, "commit_guard": False}, False),
           ("tla:Kip320", TLA_SMALL, False), ("tla:Kip101", TLA_SMALL, False)]


def batch_disagreements(model, kernel: km.Kernel, states: list, symmetry: bool) -> list[str]:
    """Where one ``km_expand_batch`` call over ``states`` differs from the readable model (empty: nowhere)."""
    spec = kernel.spec
    batch = BatchKernel(kernel.library, kernel.state_bytes)
    rows = batch.rows(b"".join(spec.pack(s) for s in states))
    got = batch.expand(rows, symmetry)
    invariants = [inv for inv in for_family(model.family).values() if inv.name in spec.invariants]
    problems = []
    at = 0
    for i, state in enumerate(states):
        readable = list(model.successors(state))
        if got.degrees[i] != len(readable):
            problems.append(f"{state}: {got.degrees[i]} successors, readable {len(readable)}")
            continue
        for j, (act, succ) in enumerate(readable):
            want = spec.pack(model.canonical(succ) if symmetry else succ)
            if (got.parent[at], got.position[at]) != (i, j) or spec.action(int(got.action[at])) != act:
                problems.append(f"{state}: successor {j} is {spec.action(int(got.action[at]))}, readable {act}")
            elif got.states[at].tobytes() != want:
                problems.append(f"{state}: successor {j} by {act} differs")
            at += 1
        violated = {inv.name for inv in invariants if not inv.holds(state)}
        named = {name for k, name in enumerate(spec.invariants) if got.masks[i] >> k & 1}
        if named != violated:
            problems.append(f"{state}: violates {named}, readable {violated}")
    assert np.array_equal(got.fps, batch.fingerprints(got.states))
    return problems


@needs_cc
@pytest.mark.parametrize(("name", "constants", "symmetry"), CONFIGS, ids=lambda c: str(c))
def test_the_batch_expansion_is_the_readable_model(name, constants, symmetry):
    model = model_of(name, constants)
    kernel = km.load(model.kernel())
    assert batch_disagreements(model, kernel, reachable(model, 600), symmetry) == []


@needs_cc
def test_a_batch_with_one_rule_changed_fails_the_check():
    model = model_of("two-phase", {"RM": 3})
    mutant = km.load(model.kernel(), extra_flags=("-DKM_MUTANT=1",))
    assert batch_disagreements(model, mutant, reachable(model, 600), False) != []


@needs_cc
def test_the_fingerprint_set_keeps_first_occurrences_across_batches():
    model = model_of("tla:Kip320", TLA_SMALL)
    kernel = km.load(model.kernel())
    batch = BatchKernel(kernel.library, kernel.state_bytes)
    rows = batch.rows(b"".join(kernel.spec.pack(s) for s in reachable(model, 400)))
    whole = batch.expand(rows, False)
    known = whole.fps[:25]
    expected, seen = [], set(known.tolist())
    for k, fp in enumerate(whole.fps.tolist()):
        if fp not in seen:
            seen.add(fp)
            expected.append(k)
    with FingerprintSet(batch, known) as fpset:
        parts = [batch.expand(rows[:150], False, fpset), batch.expand(rows[150:], False, fpset)]
    kept_fps = np.concatenate([p.fps for p in parts])
    kept_parents = np.concatenate([parts[0].parent, parts[1].parent + 150])
    assert kept_fps.tolist() == whole.fps[expected].tolist()
    assert kept_parents.tolist() == whole.parent[expected].tolist()
    assert len(set(kept_fps.tolist())) == kept_fps.size


@needs_cc
def test_a_shipped_library_loads_where_the_cache_lacks_it(tmp_path, monkeypatch):
    model = model_of("two-phase", {"RM": 3})
    kernel = km.load(model.kernel())
    shipment = Shipment.of(kernel)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr("checker.kernel_batch._LOADED", {})
    loaded = batch_kernel(shipment)
    assert loaded.state_bytes == kernel.state_bytes
    assert (tmp_path / "kmc" / "kernels" / shipment.name).exists()
