"""Stories as tests: for each fix (a feature flag of the Kafka model), the story of its JIRA or KIP,
shipped as a scenario in ``traces/scenarios``, replayed with the flag off (the invariant the story
is about breaks, at the step the story says) and with it on (every step runs with every invariant
holding, or the step the fix forbids is not enabled). Each story is replayed on the release that has
the fix, with the flag switched off, and on the last release without it, with the flag switched on,
so both directions are shown on real release lines.

KAFKA-10706's harm is liveness, not safety: a follower whose cache keeps an epoch it registered as
leader and never wrote in asks for that epoch forever (its next append would clean the cache:
2.0.1's ``assign`` replaces later entries, so no safety invariant breaks).

Replays only (no search): the whole module runs in about a second. The liveness harm of KAFKA-10706
(a truncation that never completes) is checked on the few states reachable from the story's last
state by healing actions.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pytest

from invariants.kafka_control import HEALING, every_follower_reconciled
from spec.kafka.protocols import FLAGS, RELEASES
from traces.replay import replay, replay_scenario, scenario_model
from traces.scenario import load_scenario

SCENARIOS = os.path.join(os.path.dirname(__file__), "..", "traces", "scenarios")


@dataclass(frozen=True)
class Story:
    flag: str
    file: str
    # a release replayed with the flag off (the bug shows): the first with the fix where it can
    without: str
    # a release replayed with the flag on (the bug is gone): the last without the fix where it can
    with_: str
    invariant: str  # what breaks with the flag off
    step: int  # where it breaks
    on: str  # with the flag on: "holds" or "blocked@N"
    # a release row of the file without the fix by default, which breaks as flag-off
    buggy_row: str | None = None


STORIES = (
    Story("offsets-for-leader-epoch", "kip-101-scenario-1-committed-data-lost.json", "0.11.0",
          "0.10.2", "committed-durable", 13, "holds", "0.10.2"),
    Story("kafka-5642", "kafka-5642-last-isr-member-removed-under-unclean-election.json", "2.0.0",
          "0.11.0", "committed-durable", 12, "blocked@10", "0.11.0"),
    # 0.11.0 both ways: 2.0.0 without it also creates the state at the LEO (the same commit), so its
    # UNDEFINED answer at step 9 keeps m1 on broker 0 and the story ends consistent
    Story("kafka-5163", "kafka-5163-fetch-answer-applied-to-a-truncating-partition.json", "0.11.0",
          "0.11.0", "log-matching", 30, "blocked@16", "0.11.0"),
    Story("epoch-in-response", "kip-279-scenario-1-n-eq-20-preferred-election-fast-return.json",
          "2.0.0", "0.11.0", "log-matching", 31, "holds", "0.11.0"),
    Story("kafka-7415", "kafka-7415-new-leader-without-its-epoch-in-the-cache.json", "2.0.1",
          "2.0.0", "committed-durable", 34, "holds", "2.0.0"),
    Story("kafka-7128", "kafka-7128-follower-joins-the-isr-below-the-epoch-start.json", "2.0.1",
          "2.0.0", "committed-durable", 35, "blocked@32", "2.0.0"),
    Story("kafka-7164", "kafka-7164-follower-misses-an-epoch-of-the-same-leader.json", "2.0.1",
          "2.0.0", "log-matching", 26, "blocked@20", "2.0.0"),
    Story("leader-epoch-fencing", "kafka-6880-zombie-replica-fenced-by-kip-320.json", "2.1.0",
          "2.0.1", "log-matching-all-pairs", 30, "blocked@27", "2.0.1"),
    Story("kafka-7786-fix", "kafka-7786-fenced-answer-stalls-the-follower.json", "2.1.1", "2.1.0",
          "no-fence-stall", 15, "holds", "2.1.0"),
    Story("reject-stale-broker-epoch", "kip-380-bounce-during-controlled-shutdown.json", "2.2.0",
          "2.1.1", "no-stale-control-request", 4, "holds", "2.1.1"),
    Story("reject-stale-shutdown", "kip-380-stale-controlled-shutdown.json", "2.2.0", "2.1.1",
          "no-stale-control-request", 8, "blocked@8", "2.1.1"),
    Story("detect-bounced-broker", "kip-380-fast-bounce-missed-by-the-controller.json", "2.2.0",
          "2.1.1", "no-bounce-stall", 2, "holds", "2.1.1"),
    Story("kafka-9654", "kafka-9654-stale-fenced-answer-removes-the-partition.json", "2.8.0",
          "2.8.0", "no-fence-stall", 10, "holds"),
    Story("kafka-13141", "kafka-13141-leader-counts-a-diverging-fetch-offset.json", "2.8.1",
          "2.8.0", "committed-durable", 15, "blocked@10", "2.8.0"),
    Story("kafka-13207",
          "kafka-13207-diverging-truncation-after-the-partition-left-the-fetcher.json", "2.8.1",
          "2.8.0", "committed-durable", 22, "holds", "2.8.0"),
    Story("kafka-14704", "kafka-14704-diverging-answer-hw-before-truncation.json", "3.4.1", "2.8.1",
          "no-uncommitted-below-hw", 20, "holds", "2.8.1"),
    Story("kafka-18991", "kafka-18991-stale-diverging-answer-after-leadership-returns.json",
          "3.9.1", "3.4.1", "committed-durable", 28, "blocked@25", "3.4.1"),
    # -- KRaft: every KRaft row has KIP-841, so its story breaks only with the flag switched off;
    # -- KIP-966's ELR without the clean shutdown detection (3.7.0's code) is not safe either
    # -- (elr-safety), so its "with" row is kraft-4.1
    Story("kip-841", "kip-841-fenced-replica-rejoins-the-isr.json", "kraft-3.3", "kraft-3.3",
          "committed-durable", 24, "blocked@22"),
    Story("kip-903", "kip-903-stale-fetch-state-rejoins-the-isr.json", "kraft-3.5", "kraft-3.3",
          "committed-durable", 23, "blocked@21", "kraft-3.3"),
    Story("kip-966-elr", "kip-966-last-replica-standing.json", "kraft-4.1", "kraft-4.1",
          "committed-durable", 18, "blocked@16", "kraft-3.5"),
    Story("clean-shutdown-detection", "kip-966-unclean-restart-stays-eligible.json", "kraft-4.1",
          "kraft-4.1", "elr-safety", 15, "blocked@16"),
    # the proposed fix of the upstream report (in no release): kraft-4.1 both ways
    Story("elr-filtered-by-replicas", "kraft-4.1-elr-not-filtered-by-replicas-two-brokers.json",
          "kraft-4.1", "kraft-4.1", "elr-safety", 15, "blocked@16", "kraft-4.1"),
)

#: flags whose story is a liveness harm (checked below on the state graph around the story's last
#: state)
LIVENESS_STORIES = {"kafka-10706-fix": "kafka-10706-truncation-never-completes.json"}

#: flags with no story of their own, and why
NO_STORY = {
    "effective-min-isr": "the min ISR a 3.7.0+ release computes, not a fix: with it off the model "
                         "tells a story no release has "
                         "(kraft-reassignment-removed-replica-elected-from-the-elr-with-an-empty-log, elr-safety @14) and refuses writes a release accepts; both ways in "  # noqa: E501
                         "tests/test_kafka_reassignment.py and tests/test_kafka_kraft.py",
    "unclean-election-clears-elr": "with it off a former ELR member stays eligible after an "
                                   "unclean election; no invariant reads that (reasoned, not "
                                   "searched: strict min ISR holds the new leader's HW until the "
                                   "ISR reaches min ISR, which clears the ELR, so the kept member "
                                   "misses no record committed after the election); both ways in "
                                   "tests/test_kafka_kraft.py",
    "kafka-13091": "its harm is liveness (a HW that never advances after a committed AlterIsr "
                   "shrink), shown with hw_events=1 by hw-advances in tests/test_kafka_progress.py",
    "kraft-shutdown-stops-fetcher": "it removes fetches of a broker in controlled shutdown, which "
                                    "no invariant reads: the KIP-841 shutting-down scenario is "
                                    "blocked at its first fetch with it, at the expansion without "
                                    "it (tests/test_kafka_kraft.py)",
    "fenced-broker-clean-shutdown": "its harm without it is availability (a fenced broker's "
                                    "restart leaves the ELR); both ways in "
                                    "tests/test_kafka_kraft.py",
    "kafka-18635": "its harm is availability, not an invariant (a cleanly restarted ELR member is "
                   "removed, and the partition stays offline when the last ISR member dies): its "
                   "scenario kafka-18635-clean-restart-keeps-its-elr-membership is replayed on "
                   "kraft-4.1, the flag both ways, in tests/test_kafka_kraft.py",
    "fenced-removes-partition": "the mechanism of KAFKA-7786's stall, told by the kafka-7786 story",
    "truncate-on-fetch": "KAFKA-10554 changes how truncation happens, not whether a story breaks; "
                         "its fix stories are KAFKA-13141, 13207, 14704 and 18991",
    "unclean": "configuration (unclean.leader.election.enable), switched on by the KIP-279 "
               "scenario 3 files",
    "lossy-crash": "a fault, switched on by KIP-101 scenario 2",
    "consumer-truncation-detection": "a client rule (KAFKA-7747, 2.3.0), told by the "
                                     "kip-320-consumer scenarios and tests/test_kafka_clients.py",
    "fetch-from-follower": "configuration (KIP-392, replica.selector.class), switched on by the "
                           "kafka-14704 consumer scenario, replayed in tests/test_kafka_clients.py",
    "kafka-7414": "its harm is availability, not an invariant (the follower's broker halts): its "
                  "scenario kafka-7414-follower-ahead-of-its-leader-halts-the-broker is replayed "
                  "on 2.0.0 and 2.0.1, the flag both ways, in tests/test_kafka_control.py",
    "kafka-7152": "it removes a step (shrinking a caught-up follower), it breaks no invariant: "
                  "replayed on 2.0.1 and 2.1.0, and kraft rows, in tests/test_kafka_control.py; "
                  "the stories that shrink the ISR first leave the follower behind (kafka-7128, "
                  "kip-966)",
    "kafka-15583": "the HW held back under min ISR (KIP-966's strict min ISR): replayed on 3.4.1 "
                   "and 3.9.1, kraft-3.5 and kraft-4.1, in tests/test_kafka_control.py",
    "kafka-8400": "it loses no data and stalls nothing at the model's bounds (the leader relearns "
                  "the LEO at the next fetch): replayed on 2.2.0 and 2.8.0, the flag both ways, in "
                  "tests/test_kafka_control.py",
    "truncation-lowers-hw": "a follower's HW above its LEO (before 2.4.0) is read by nothing until "
                            "its next fetch answer, a restart or its election resets it: no "
                            "invariant breaks; replayed on 2.2.0, the flag both ways, in "
                            "tests/test_kafka_data_plane_releases.py",
    "kraft": "the mechanism (the KRaft controller) the KIP-841, KIP-903 and KIP-966 stories run on",
    "alter-isr": "changes how the ZooKeeper-mode ISR changes (2.7.0's AlterIsr round trip), not "
                 "whether a story breaks: its scenario "
                 "alter-isr-shrink-in-flight-while-the-leader-changes (blocked before 2.7, holds "
                 "from it) and each of its rules on 2.2.0 and 2.8.0+ in "
                 "tests/test_kafka_alter_isr.py",
    "kafka-15021": "changes how epochs move (an ISR shrink keeps the leader epoch), not whether a "
                   "story breaks: the KRaft stories replay with it (kraft-4.1) and without it "
                   "(kraft-3.3, kraft-3.5)",
    "kafka-14140": "a dead or shutting-down member proposed into the ISR is answered "
                   "INELIGIBLE_REPLICA and the leader reverts (3.4.1, 3.9.1) where 2.8.1 and the "
                   "flag off write it: replayed in tests/test_kafka_alter_isr.py (no story file)",
    "kafka-15665": "changes when a reassignment completes (every target replica in the ISR, not "
                   "only the adding ones), not whether a story breaks: replayed on kraft-3.5 and "
                   "kraft-4.1, the flag both ways, in tests/test_kafka_reassignment.py",
}

def _outcome(result) -> tuple:
    if result.outcome == "violated":
        return ("violated", result.invariant.name, result.step)
    if result.outcome == "blocked":
        return ("blocked", result.step)
    return (result.outcome,)


def _replay(story: Story, protocol: str, value: str):
    scenario = load_scenario(os.path.join(SCENARIOS, story.file))
    return replay_scenario(scenario_model(scenario, protocol, [f"{story.flag}={value}"]), scenario)


def test_every_flag_has_a_story_or_a_reason():
    told = {story.flag for story in STORIES} | set(LIVENESS_STORIES)
    assert told.isdisjoint(NO_STORY)
    assert told | set(NO_STORY) == set(FLAGS)


@pytest.mark.parametrize("story", STORIES, ids=lambda s: s.flag)
def test_the_bug_shows_with_the_flag_off(story: Story) -> None:
    result = _replay(story, story.without, "off")
    assert _outcome(result) == ("violated", story.invariant, story.step), result.summary()
    assert result.explanation  # the replay says what broke, in words


@pytest.mark.parametrize("story", STORIES, ids=lambda s: s.flag)
def test_the_fix_holds_or_forbids_the_step(story: Story) -> None:
    expected = ("holds",) if story.on == "holds" else ("blocked", int(story.on.split("@")[1]))
    assert _outcome(_replay(story, story.without, "on")) == expected
    # the release without the fix, given the flag alone, no longer breaks either (it may stop
    # earlier: KIP-380's stale-request check without its bounce detection leaves the broker waiting
    # for a LeaderAndIsr)
    assert _outcome(_replay(story, story.with_, "on"))[0] in ("holds", "blocked")


@pytest.mark.parametrize("story", STORIES, ids=lambda s: s.flag)
def test_the_story_file_tells_the_same_history(story: Story) -> None:
    """The file's own expectations agree: every release row with the fix holds or blocks, and a
    release row without it breaks as the flag-off replay does (KAFKA-9654 has none: every release
    that truncates on fetch has it; KIP-101's is 0.10.2, which its file shows as a violation
    too)."""
    scenario = load_scenario(os.path.join(SCENARIOS, story.file))
    assert story.flag.upper().replace("-FIX", "") in scenario.source.upper() or story.flag in (
        "offsets-for-leader-epoch", "epoch-in-response", "leader-epoch-fencing",
        "reject-stale-broker-epoch", "reject-stale-shutdown", "detect-bounced-broker")
    for release in RELEASES:
        if release.features.flag(story.flag):
            assert scenario.expectation(release.name).outcome in ("holds", "blocked"), release.name
    if story.buggy_row is not None:
        buggy = scenario.expectation(story.buggy_row)
        assert ((buggy.outcome, buggy.invariant, buggy.step)
                == ("violated", story.invariant, story.step))


# -- KAFKA-10706's liveness harm -------------------------------------------------------------------
def _truncation_can_complete(protocol: str, fix: str) -> tuple[bool, int]:
    """Replay the story, then search the states reachable from its last one by healing actions alone
    (deliveries, fetches, truncation rounds) for one where every live follower reconciled with the
    leader in its epoch."""
    scenario = load_scenario(os.path.join(SCENARIOS, LIVENESS_STORIES["kafka-10706-fix"]))
    model = scenario_model(scenario, protocol, [f"kafka-10706-fix={fix}"])
    start = replay(model, scenario.steps, invariants=[]).trace.steps[-1].state
    seen, todo = {start}, [start]
    while todo:
        state = todo.pop()
        if every_follower_reconciled(state):
            return True, len(seen)
        for action, successor in model.successors(state):
            if action.name in HEALING and successor not in seen:
                seen.add(successor)
                todo.append(successor)
    return False, len(seen)


@pytest.mark.parametrize("protocol", ["2.0.1", "2.1.0", "2.2.0"])
def test_kafka_10706_truncation_never_completes_without_the_fix(protocol: str) -> None:
    stuck, states = _truncation_can_complete(protocol, "off")
    # asks, is answered, truncates at its LEO: the same state again
    assert not stuck and states == 3
    assert _truncation_can_complete(protocol, "on")[0]


def test_kafka_10706_liveness_story_breaks_no_safety_invariant():
    scenario = load_scenario(os.path.join(SCENARIOS, "kafka-10706-truncation-never-completes.json"))
    for protocol in ("2.0.1", "2.2.0"):
        assert replay_scenario(scenario_model(scenario, protocol), scenario).outcome == "holds"
