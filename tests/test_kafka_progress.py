"""KAFKA-13091 (fixed in 3.1.0): before it, 2.7 to 3.0 commit an AlterIsr shrink without recomputing
the HW (``Partition.handleAlterIsrResponse``), so with the removed follower dead and no new append
the HW never advances. The flag ``kafka-13091`` and the liveness property ``hw-advances``
(``invariants.kafka_progress``), shown with ``--const hw_events=1`` (by default the model's
AdvanceHighWatermark is enabled whenever the ISR allows)."""

from __future__ import annotations

import json

import pytest

from kmc.cli import main
from spec.kafka.releases import resolve

#: one record, one crash: the smallest configuration with a shrink that would let the HW advance
SMALL = ["records=1", "epochs=1", "crashes=1"]


def _check(capsys, tmp_path, protocol: str, *extra: str) -> dict:
    argv = ["check", "kafka", "--protocol", protocol, "--json", "--invariant", "hw-advances",
            "-deadlock", "--trace-dir", str(tmp_path)]
    for const in SMALL:
        argv += ["--const", const]
    for item in extra:
        argv += (["--feature", item] if "=" in item and not item.startswith("hw_events")
                 else ["--const", item])
    main(argv)
    return json.loads(capsys.readouterr().out)


def test_the_flag_is_on_from_3_1_0_in_both_modes():
    assert not resolve("2.8.1").kafka_13091 and not resolve("3.0.2").kafka_13091
    assert (resolve("3.1.0").kafka_13091 and resolve("3.4.1").kafka_13091
            and resolve("kraft-3.3").kafka_13091)


def test_a_committed_shrink_leaves_the_hw_behind_on_2_8_1(capsys, tmp_path):
    """Produce, ShrinkIsr, a fetch served, the follower crashes, the controller writes the shrink,
    the leader takes the answer: HW 0 with ISR {0} and LEO 1, and only a new produce request would
    move it."""
    out = _check(capsys, tmp_path, "2.8.1", "hw_events=1")
    assert out["verdict"] == "violated"
    (violation,) = out["violations"]
    assert violation["kind"] == "liveness" and violation["length"] == 7
    assert "no step without new traffic moves it" in violation["explanation"]
    trace = (tmp_path / violation["trace_file"].split("/")[-1]).read_text(encoding="utf-8")
    assert "ReceiveAlterPartitionResponse" in trace and "ShrinkIsr" in trace


#: KAFKA-13091's fix alone on 2.8.1 (handleAlterIsrResponse calls maybeIncrementLeaderHW, 3.1.0),
#: the releases with it, and 2.8.1 without the hw_events bound
@pytest.mark.slow  # 2 s a search; the fast test above runs the liveness check's every line
@pytest.mark.parametrize("protocol,extra",
                         [("2.8.1", ("hw_events=1", "kafka-13091=on")),
                          ("3.4.1", ("hw_events=1",)), ("kraft-3.5", ("hw_events=1",)),
                          ("2.8.1", ())])
def test_the_hw_advances_with_the_fix_or_without_hw_events(capsys, tmp_path, protocol, extra):
    assert _check(capsys, tmp_path, protocol, *extra)["verdict"] == "holds"
