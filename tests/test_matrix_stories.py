"""A violated cell names the story its counterexample is an instance of: the oldest later fix whose
replay removes the counterexample (``checker.stories``). Each case is a shortest counterexample
found by the checker, not a hand-written trace, and its story is checked against the release
history."""

from __future__ import annotations

import pytest

import spec.kafka  # noqa: F401 - registers the model and its invariants
from checker.bfs import check
from checker.search import SearchOptions
from checker.stories import _still_violates, story_of
from invariants.registry import for_family
from spec.registry import build_model

CONTROL = ["records=1", "epochs=1", "crashes=0", "bumps=1", "shutdowns=1", "bounces=1"]


@pytest.mark.parametrize("protocol,flags,consts,invariant,ticket", [
    ("2.1.0", [], ["records=1", "epochs=2", "bumps=2", "crashes=0"], "no-fence-stall",
     "KAFKA-7786"),
    ("2.8.0", [], [], "committed-durable", "KAFKA-13141"),
    ("2.8.1", [], [], "no-uncommitted-below-hw", "KAFKA-14704"),
    ("2.0.1", [], CONTROL, "no-stale-control-request", "KIP-380 (KAFKA-7235)"),
    ("2.0.1", [], CONTROL, "no-bounce-stall", "KIP-380"),
    ("2.8.0", ["kafka-9654=off"], ["records=1", "epochs=2", "bumps=2", "crashes=0"],
     "no-fence-stall", "KAFKA-9654"),
])
def test_the_story_is_the_fix_that_removes_the_counterexample(protocol, flags, consts, invariant,
                                                              ticket):
    inv = for_family("kafka")[invariant]
    result = check(build_model("kafka", consts, protocol, flags), SearchOptions(invariants=[inv]))
    assert result.verdict.value == "violated"
    trace = result.violations[0].trace
    story = story_of("kafka", protocol, flags, consts, inv, trace)
    assert story is not None and story.ticket == ticket, story
    # the claim is checked: with the fix on the trace is no longer a counterexample, without it it
    # is
    assert _still_violates(build_model("kafka", consts, protocol, flags), trace, inv)
    assert not _still_violates(build_model("kafka", consts, protocol, flags + [f"{story.flag}=on"]),
                               trace, inv)


def test_a_counterexample_no_release_fixes_names_the_switch_that_allows_it():
    inv = for_family("kafka")["committed-durable"]
    result = check(build_model("kafka", [], "3.9.1", ["unclean=on"]),
                   SearchOptions(invariants=[inv]))
    story = story_of("kafka", "3.9.1", ["unclean=on"], [], inv, result.violations[0].trace)
    assert story.flag is None and "unclean=on" in story.text


@pytest.mark.slow  # several searches: about 10 s
def test_a_counterexample_two_fixes_remove_together_names_both():
    """KIP-279's scenario 1 in its shortest form (0.11.0, records=3, no crash): KIP-279's answer
    alone (2.0.0's follower lookup answers UNDEFINED below its first epoch) does not remove it, nor
    KAFKA-7415 alone (0.11.0's answer is an offset only); both together, as 2.0.1 ships them, do,
    with KAFKA-5163 (1.1.0): without it a fetch answer in flight across a leadership round trip is
    applied to the truncating partition, another counterexample at the same bounds."""
    inv = for_family("kafka")["log-matching"]
    consts = ["records=3", "crashes=0"]
    result = check(build_model("kafka", consts, "0.11.0"), SearchOptions(invariants=[inv]))
    story = story_of("kafka", "0.11.0", [], consts, inv, result.violations[0].trace)
    assert (story.flag is None and story.ticket == "KAFKA-5163 (KIP-113), KIP-279, KAFKA-7415"
            and "fixed in 2.0.1" in story.text)


@pytest.mark.parametrize("protocol,flags,invariant,ticket", [
    ("0.10.2", [], "consumed-stays", "KIP-101"),
    # about 3 s: story_of's searches at the matrix bounds; the fast tier names KAFKA-13141's fix on
    # the same row (below), and tests/test_kafka_stories.py replays KAFKA-13207's story
    pytest.param("2.8.0", [], "consumed-stays", "KAFKA-13207", marks=pytest.mark.slow),
    # KIP-101's story: above
    pytest.param("0.10.2", [], "acknowledged-durable", "KIP-101", marks=pytest.mark.slow),
    ("2.8.0", [], "acknowledged-durable", "KAFKA-13141"),
    ("2.2.0", ["unclean=on"], "no-silent-skip", "KIP-320 (KAFKA-7747)"),
])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_client_cells_at_their_matrix_bounds_name_the_fix(protocol, flags, invariant, ticket):
    """The client columns at the bounds ``kmc matrix`` checks them at: a consumed or acknowledged
    record is lost where replication loses it (KIP-101, KAFKA-13141, KAFKA-13207), and before 2.3.0
    a consumer reads on silently after an unclean election, which the consumer's position validation
    (KIP-320's consumer side) removes."""
    consts = list(build_model("kafka", []).matrix_bounds[invariant])
    inv = for_family("kafka")[invariant]
    result = check(build_model("kafka", consts, protocol, flags), SearchOptions(invariants=[inv]))
    assert result.verdict.value == "violated"
    trace = result.violations[0].trace
    story = story_of("kafka", protocol, flags, consts, inv, trace)
    assert story is not None and story.ticket == ticket, story
    assert not _still_violates(build_model("kafka", consts, protocol, flags + [f"{story.flag}=on"]),
                               trace, inv)


def test_client_columns_of_the_matrix():
    model = build_model("kafka", [])
    assert "no-silent-skip" in model.matrix_excluded, (
        "no-silent-skip needs two records: checked by name")
    # elr-safety is a KRaft column: vacuous (left empty) on ZooKeeper rows, a default column on the
    # KRaft rows
    assert "elr-safety" in model.matrix_excluded
    assert "elr-safety" not in build_model("kafka", [], "kraft-4.1").matrix_excluded
    # the KRaft rows check the client columns with their client too (without one they would hold
    # vacuously)
    kraft = build_model("kafka", [], "kraft-3.5").matrix_bounds
    assert "acks=-1" in kraft["acknowledged-durable"] and "consumers=1" in kraft["consumed-stays"]
    assert "consumers=1" in kraft["no-silent-skip"]
    bounds = model.matrix_bounds
    assert "acks=-1" in bounds["acknowledged-durable"] and "consumers=1" in bounds["consumed-stays"]
    assert "records=2" in bounds["no-silent-skip"] and "consumers=1" in bounds["no-silent-skip"]


@pytest.mark.parametrize("protocol,verdict",
                         [pytest.param("kraft-3.3", "violated", marks=pytest.mark.slow),
                          ("kraft-3.5", "violated"), ("kraft-4.1", "holds"),
                                              # by release number: KAFKA-18991 came to the 4.0 line
                                              # in 4.0.1
                          ("4.0.0", "violated"),
                          pytest.param("4.0.1", "holds", marks=pytest.mark.slow)])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_kraft_rows_break_replica_sanity_by_kafka_18991_until_it_is_fixed(protocol, verdict):
    """The KRaft rows' fetch path is the ZooKeeper row's of the same release, so KAFKA-18991's stale
    append (fixed in 3.9.1, 4.0.1 and 4.1.0) breaks replica-sanity on kraft-3.3 and kraft-3.5 at the
    bounds ``kmc matrix`` checks that column at on the KRaft rows, and not on kraft-4.1."""
    consts = list(build_model("kafka", [], protocol).matrix_bounds["replica-sanity"])
    inv = for_family("kafka")["replica-sanity"]
    result = check(build_model("kafka", consts, protocol), SearchOptions(invariants=[inv]))
    assert result.verdict.value == verdict
    if verdict == "violated":
        trace = result.violations[0].trace
        assert result.violations[0].length == 12
        story = story_of("kafka", protocol, [], consts, inv, trace)
        assert story is not None and story.ticket == "KAFKA-18991", story
        # the fix on the row's own release line where it has one (4.0.1 for 4.0.0), else the next
        # release with it
        assert story.text.endswith(f"(fixed in {'4.0.1' if protocol == '4.0.0' else '3.9.1'})"), (
            story.text)
        assert not _still_violates(build_model("kafka", consts, protocol, ["kafka-18991=on"]),
                                   trace, inv)
