"""The readable model's side of the kernel's proofs (tests/test_kafka_kernel*.py, the reduced
searches of tests/test_dead.py's verdicts, tests/test_kafka_state_space.py's matrix cells searched
alone, tests/test_symmetry.py's searches with and without symmetry, tests/test_kernel_config.py's
pairs of configurations), recorded once.

A search on the readable model (``--kernel off``) costs 10 to 100 times the kernel's, and it only
changes when the readable model's source does. So each both-way search of the kernel's proofs is
searched on the readable model by one command,

    python3 -m tests.readable_reference

which runs the tests of those modules that search (both tiers) with every readable search
live, checks the kernel against each as it goes, and writes what the readable model found to
``readable_reference.json`` beside this file, with the digest of the readable source that found it
(``tests.matrix_table.readable_digest``, the matrix table's). A test then searches only on the
kernel and compares with the record; on a mismatch it searches the readable model live, so the
failure shows both searches side by side. A test fails, naming that command, when the readable
source changed since the record was made or when it asks for a search the record lacks; a fast
test (tests/test_kafka_kernel.py) keeps a few searches live both ways and compares them with the
record too.

A record is packing-independent: the verdict, distinct and generated states, depth, out-degrees
and each counterexample's invariant, length, actions, discovery figures and states, the states as
a SHA-256 of their readable form (``repr`` of the readable state, field by field), so a change to
the kernel's packing does not stale it.

The state-for-state proofs on a breadth-first prefix (``tests.test_kafka_kernel.state_for_state``)
are recorded by the same command, through the same ``readable_record``: per configuration and
prefix, the count of states and one SHA-256 of what the readable model says there, packed (each
state, its successor count, (action, successor) list in order, violated invariants, and each
successor's canonical form and form without dead answers). Packed bytes are the kernel's packing's
(``spec/kafka/kernel.py``, outside the readable digest): the file records that source's digest too
(``packing_digest``), and a state-for-state record fails, saying the packing changed, when it
differs. Unpacking every successor to hash a readable form instead would cost the kernel's side
more than the readable model's successors (bench/NOTES.md, 2026-12-02 stop45-pin).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict
from functools import cache
from pathlib import Path
from typing import Any

from tests.matrix_table import ROOT, readable_digest

#: the data file: the readable model's searches
REFERENCE = Path(__file__).with_name("readable_reference.json")
#: the command that re-makes it
REMAKE = "python3 -m tests.readable_reference"
#: the test modules whose readable searches it holds
MODULES = ("tests/test_kafka_kernel.py", "tests/test_kafka_kernel_consumers.py",
           "tests/test_dead.py", "tests/test_kafka_state_space.py", "tests/test_symmetry.py",
           "tests/test_kernel_config.py")
#: the tests that search the readable model (both ways, or for a path to rare states; test_dead's
#: reduced searches of matrix cells, ``full_verdict``; test_kafka_state_space's searches of one
#: invariant, ``matrix_cells``; test_symmetry's searches with and without ``--symmetry``,
#: ``same_verdicts``; test_kernel_config's configurations of one library, ``one_library``) and
#: that compare state for state on a breadth-first prefix (tests/test_kafka_kernel.py's
#: ``state_for_state``: ``..._state_for_state``, ``..._reachable_state...``,
#: ``...switched_flag...``, tests/test_kafka_kernel_consumers.py's ``..._consumer_states...``)
SEARCHING = ("search or agree or rare or full_verdict or matrix_cells or same_verdicts or "
             "one_library or state_for_state or reachable_state or switched_flag or "
             "consumer_states")
#: the kernel's packing (``spec/kafka/kernel.py``, outside ``readable_digest``): a state-for-state
#: record hashes packed states, so it is held to this source too
PACKING = ROOT / "spec" / "kafka" / "kernel.py"
#: set by ``REMAKE`` for the test run: a directory where each process writes what it recorded
RECORDING = "KMC_RECORD_READABLE_REFERENCE"

_recorded: dict[str, dict[str, Any]] = {}


def states_digest(states: Any) -> str:
    """The SHA-256 of readable states, each by its ``repr`` (its fields, by name, in order)."""
    digest = hashlib.sha256()
    for state in states:
        digest.update(repr(state).encode() + b"\n")
    return digest.hexdigest()


def search_record(result: Any) -> dict[str, Any]:
    """What a search found, as JSON: the figures the proofs compare (``summary`` of
    tests/test_kafka_kernel.py), a counterexample's states as their ``states_digest``."""
    return {
        "verdict": result.verdict.value, "distinct": result.distinct_states,
        "generated": result.states_generated, "depth": result.depth,
        "out_degree": asdict(result.out_degree) if result.out_degree else None,
        "violations": [{"invariant": v.invariant, "length": v.length,
                        "actions": [str(step.action) for step in v.trace.steps],
                        "states": states_digest(v.trace.states),
                        "discovered": asdict(v.discovered) if v.discovered else None}
                       for v in result.violations],
    }


def search_key(model: Any, options: dict[str, Any]) -> tuple[str, str]:
    """(key, label) of a search: the key a SHA-256 of the model's ``describe()`` (its row, every
    flag, its bounds) and the search options; the label the same in words, for a reader."""
    described = json.dumps({"model": model.describe(), "options": options}, sort_keys=True,
                           default=list)
    constants = ",".join(f"{k}={v}" for k, v in sorted(model.constants.items()))
    named = json.dumps(options, default=list)
    label = f"{getattr(model, 'protocol', model.name)} {constants} {named}"
    return hashlib.sha256(described.encode()).hexdigest()[:24], label


def recording() -> bool:
    return bool(os.environ.get(RECORDING))


@cache
def reference() -> dict[str, Any]:
    """The data file, read once a process (empty when there is none)."""
    if not REFERENCE.exists():
        return {"digest": None, "searches": {}}
    return json.loads(REFERENCE.read_text(encoding="utf-8"))


def packing_digest() -> str:
    """The SHA-256 of the kernel's packing's source (``PACKING``)."""
    return hashlib.sha256(PACKING.read_bytes()).hexdigest()


def stale_reason(packed: bool = False) -> str | None:
    """Why the record cannot be used (None: it can): missing, or made by another readable
    source, or (``packed``: a state-for-state record, of packed states) by another packing."""
    recorded, now = reference().get("digest"), readable_digest()
    if recorded is None:
        return f"there is no readable reference ({REFERENCE.name}): make it with `{REMAKE}`"
    if recorded != now:
        return (f"the readable Kafka model changed since {REFERENCE.name} was made (recorded "
                f"sha256:{recorded}, now sha256:{now}): re-make it with `{REMAKE}` (it searches "
                f"the readable model again and checks the kernel against it)")
    recorded, now = reference().get("packing"), packing_digest()
    if packed and recorded != now:
        return (f"the kernel's packing ({PACKING.relative_to(ROOT)}) changed since "
                f"{REFERENCE.name} was made (recorded sha256:{recorded}, now sha256:{now}; the "
                f"readable model did not): re-make it with `{REMAKE}` (its state-for-state "
                f"records hash packed states)")
    return None


def readable_search(model: Any, options: dict[str, Any], live: Any) -> dict[str, Any]:
    """The readable model's record of searching ``model`` with ``options``: from the data file, or,
    while ``REMAKE`` runs, ``live()`` (the readable search's result), recorded. Fails (an
    AssertionError naming ``REMAKE``) when the file is stale or lacks this search."""
    return readable_record(model, options, lambda: search_record(live()))


def readable_record(model: Any, options: dict[str, Any], compute: Any,
                    packed: bool = False) -> Any:
    """What the readable model gives for ``model`` and ``options`` (JSON): from the data file, or,
    while ``REMAKE`` runs, ``compute()``, recorded; ``packed``: a record of packed states, held to
    the packing's source too (``stale_reason``)."""
    key, label = search_key(model, options)
    if recording():
        record = compute()
        held = _recorded.setdefault(key, {"label": label, "record": record})
        assert held["record"] == record, f"two readable searches of {label} differ"
        _write_part()
        return record
    reason = stale_reason(packed)
    assert reason is None, reason
    held = reference()["searches"].get(key)
    assert held is not None, (f"{REFERENCE.name} has no readable search of {label}: a test asks "
                              f"for a search the reference lacks; re-make it with `{REMAKE}`")
    return held["record"]


def _write_part() -> None:
    """While recording: what this process recorded so far, into the run's directory (a pytest-xdist
    worker may end without running ``atexit``)."""
    part = Path(os.environ[RECORDING]) / f"part-{os.getpid()}.json"
    part.write_text(json.dumps(_recorded), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Run the kernel's proofs that search (``SEARCHING``, both tiers; extra arguments go to pytest,
    e.g. ``-n 2``) with the readable searches live and, when every one passes, write what the
    readable model found and the digest of its source."""
    extra = list(sys.argv[1:] if argv is None else argv)
    if any(arg.startswith(("-k", "-m")) or "::" in arg for arg in extra):
        print(f"{REMAKE} records every searching test: a choice of tests ({' '.join(extra)}) "
              f"would write a partial reference", file=sys.stderr)
        return 64
    with tempfile.TemporaryDirectory() as parts:
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "",
                   "-k", SEARCHING, *extra, *MODULES]
        code = subprocess.call(command, env={**os.environ, RECORDING: parts})
        if code != 0:
            print(f"the proofs failed (pytest exit {code}): {REFERENCE.name} left as it was",
                  file=sys.stderr)
            return 1
        return write(Path(parts))


def write(parts: Path) -> int:
    """Write the data file from the searches a recording run's processes wrote into ``parts``, in
    the order of their labels (then keys: configurations with other switched flags share a label),
    the same file whatever order the processes ran them in."""
    searches: dict[str, Any] = {}
    for part in sorted(parts.glob("part-*.json")):
        for key, held in json.loads(part.read_text(encoding="utf-8")).items():
            if searches.setdefault(key, held) != held:
                print(f"two readable searches of {held['label']} differ", file=sys.stderr)
                return 1
    data = {"digest": readable_digest(), "packing": packing_digest(), "command": REMAKE,
            "searches": dict(sorted(searches.items(), key=lambda kv: (kv[1]["label"], kv[0])))}
    REFERENCE.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"{REFERENCE.name}: {len(searches)} readable searches, source digest "
          f"sha256:{data['digest']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
