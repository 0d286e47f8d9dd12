"""A mutation fuzzer that drives the real ``kmc`` command line with hostile inputs.

    python3 bench/fuzz.py --seconds 1800 --seed 1 --out fuzz.json

Each case runs ``python3 -m kmc.cli ...`` in a fresh process (memory capped, time bounded) on one
of these classes of input, and checks the outcome against an oracle:

* ``trace``: seed traces (our JSON, ITF, msgpack; two-phase and Kafka) mutated byte-wise and
  structurally, given to ``trace show/export/diagram/explain/replay``;
* ``scenario``: the shipped scenarios with mutated steps, names, numbers and structure, replayed;
* ``checkpoint``: a checkpoint with raw byte damage (must be refused) or a payload changed behind a
  valid checksum (refused, or resumed to exactly the uninterrupted run's verdict and counts);
* ``special``: FIFOs, devices, directories, dangling and looping links, empty files as inputs;
* ``output``: traces, exports, diagrams and checkpoints aimed at places that cannot hold them;
* ``signal``: SIGINT at a random moment (one or two interrupts, one or two workers) and resumes,
  whose final counts must equal the uninterrupted run's;
* ``empty``: an empty or blank value for a random option or argument of a random subcommand (found
  by walking the parser, so new options are fuzzed too): refused with one line naming it, exit 64;
* ``number``: an integer outside signed 64 bits (a JSON number or an ITF ``#bigint``, up to 4,000
  digits) put in a random integer field of a trace or a scenario, or in a checkpoint's payload
  behind a valid checksum: exit 65, on every reader;
* ``startup``: SIGINT 0-200 ms after the start, with SIGINT blocked at exec (so it waits for kmc's
  first line) or not (then one landing in Python's own start-up is recorded apart): 130 and one
  line;
* ``writers``: two processes writing one output path at once (``trace export -o``,
  ``--checkpoint``), then the file read back: it must be whole (and a checkpoint resume to the
  reference counts).

A defect is any of: a traceback, a death by signal, a hang (no exit within the time bound), an exit
code not documented for the class, an error that is not one line, a silent wrong result (counts or
verdict differing from the reference), a lost or partial file. ``run_cases`` is also used by a
short slice in the test suite.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

CLASSES = ("trace", "scenario", "checkpoint", "special", "output", "signal", "empty", "number",
           "startup", "writers")
CASE_SECONDS = 60  # a case that runs longer is a hang
#: a SIGINT while the interpreter itself starts (site, .pth files, standard streams), before any kmc
#: code runs: recorded apart, since no kmc code can handle it
STARTUP = "interrupted in Python's own start-up"
MEMORY_BYTES = 3 * 2**30  # address-space cap of each case: a memory blow-up fails fast
#: exit codes a command may give on hostile input of each class (beyond the verdicts)
ALLOWED = {
    "trace": {0, 11, 12, 13, 65, 66, 67},
    "scenario": {0, 11, 12, 13, 65, 66, 67},
    "checkpoint": {0, 12, 20, 65, 66},
    "special": {65, 66},
    "output": {73, 74},
    "signal": {0, 130},
    "empty": {64},
    "number": {65},
    "startup": {130},
    "writers": {0},
}


@dataclass
class Outcome:
    cls: str
    argv: list[str]
    code: int | None
    seconds: float
    defects: list[str] = field(default_factory=list)
    note: str = ""


def _limit() -> None:
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))


def _limit_and_block() -> None:
    _limit()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


def kmc(argv: list[str], cwd: str, timeout: float = CASE_SECONDS, signal_after: float | None = None,
        block_sigint: bool = False) -> tuple[int | None, str, str, float]:
    """Run the command line; (exit code or None on a hang, stdout, stderr, seconds).
    ``block_sigint``: start it with SIGINT blocked (inherited across exec), so that a SIGINT waits
    for kmc's code to unblock it."""
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "kmc.cli", *argv], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, errors="replace",
                            preexec_fn=_limit_and_block if block_sigint else _limit,
                            start_new_session=True, env={**os.environ, "PYTHONPATH": ROOT})
    try:
        if signal_after is not None:
            try:
                out, err = proc.communicate(timeout=signal_after)
                return proc.returncode, out, err, time.monotonic() - started
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err, time.monotonic() - started
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return None, out, err, time.monotonic() - started
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)  # nothing of the case survives it (workers, JVMs)


def judge(cls: str, argv: list[str], code: int | None, err: str, seconds: float, allowed: set[int]
          | None = None,
          stdout: str = "") -> Outcome:
    out = Outcome(cls, argv, code, round(seconds, 3))
    if code is None:
        out.defects.append("hang")
        return out
    # before Python installs its handler
    silent_sigint = code == -signal.SIGINT and not err and not stdout
    if silent_sigint or "Fatal Python error: init_" in err:
        # a signal while the interpreter itself starts (site, .pth files), before any kmc code
        # runs: recorded apart, it is not kmc's to handle
        out.defects.append(STARTUP)
        return out
    if "Traceback (most recent call last)" in err:
        out.defects.append("traceback")
    if code < 0:
        out.defects.append(f"killed by signal {-code}")
    elif code not in (allowed or ALLOWED[cls]):
        out.defects.append(f"exit code {code}")
    if code >= 64 and code != 130 and len([line for line in err.splitlines() if line.strip()]) != 1:
        out.defects.append("error not one line")
    return out


# -- mutations -------------------------------------------------------------------------------------
def mutate_bytes(rng: random.Random, data: bytes, others: list[bytes]) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.choice((1, 1, 1, 2, 4, 16))):
        op = rng.randrange(9)
        i = rng.randrange(len(buf)) if buf else 0
        if op == 0 and buf:
            buf[i] ^= 1 << rng.randrange(8)
        elif op == 1 and buf:
            buf[i] = rng.randrange(256)
        elif op == 2:
            del buf[i:i + rng.randrange(1, 64)]
        elif op == 3:
            buf[i:i] = rng.randbytes(rng.randrange(1, 32))
        elif op == 4:
            del buf[rng.randrange(len(buf) + 1):]
        elif op == 5 and buf:
            j = rng.randrange(i, len(buf))
            buf[j:j] = buf[i:j + 1] * rng.randrange(1, 8)
        elif op == 6 and others:
            other = rng.choice(others)
            k = rng.randrange(len(other) + 1)
            buf[i:] = other[k:]
        elif op == 7:
            buf[i:i] = rng.choice([b"\xc9\xff\xff\xff\xff\x03", b"\xdd\xff\xff\xff\xff",
                                   b"[" * 5000, b"9" * 5000, b" " * 20000, b"\x00" * 64, b"NaN",
                                   b"1e999", b'"\\ud800"'])
        elif op == 8 and buf:
            buf[i] = rng.choice(b'{}[]":,\\0-')
    return bytes(buf)


def _interesting(rng: random.Random) -> Any:
    return rng.choice([
        None, True, -1, 0, 2**63, -(2**63) - 1, 10**40, 1.5, float("inf"), "", " " * 50_000,
        "x" * 100_000, "Fetch(" + " " * 30_000 + "x", "TMAbort(rm=" + "7" * 5000 + ")",
        "A" + " " * 30_000 + "(", [], {}, [[[[[]]]]],
        {"action": "TMAbort", "params": {"rm": [1, [2, [3]]]}}, "\u0000\ud7ff", "a(b=c)(d)",
    ])


def mutate_json(rng: random.Random, data: bytes) -> bytes:
    """Change one node of the document: a value, a key, a type, or nest it deep."""
    try:
        doc = json.loads(data)
    except ValueError:
        return mutate_bytes(rng, data, [])
    nodes: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key in list(node):
                nodes.append((node, key))
                walk(node[key])
        elif isinstance(node, list):
            for i in range(len(node)):
                nodes.append((node, i))
                walk(node[i])

    walk(doc)
    if not nodes:
        return mutate_bytes(rng, data, [])
    for _ in range(rng.choice((1, 1, 2, 3))):
        parent, key = rng.choice(nodes)
        op = rng.randrange(5)
        try:
            if op == 0:
                parent[key] = _interesting(rng)
            elif op == 1 and isinstance(parent, dict):
                del parent[key]
            elif op == 2 and isinstance(parent, dict):
                parent[rng.choice(["extra", "#meta", "format", "steps",
                                   "x" * 300])] = _interesting(rng)
            elif op == 3:
                value = parent[key]
                for _ in range(rng.choice((10, 100, 3000))):
                    value = [value]
                parent[key] = value
            elif isinstance(parent, list):
                parent.insert(key, parent[key])
        except (IndexError, KeyError, TypeError):
            pass
    try:
        text = json.dumps(doc, allow_nan=True)
    except (ValueError, RecursionError):
        return mutate_bytes(rng, data, [])
    if rng.random() < 0.2:  # a literal no json.dumps would write: a huge integer
        text = text.replace("1", "1" + "0" * rng.choice((50, 5000)), 1)
    return text.encode()


# -- the workspace: seeds and references -----------------------------------------------------------
class Workspace:
    def __init__(self, root: str, quick: bool = False) -> None:
        self.root = root
        self.quick = quick  # seeds from two-phase only, no RM=6 reference for signal cases
        self.seeds: dict[str, bytes] = {}
        self.scenarios: list[bytes] = []
        self.reference: dict[str, dict[str, Any]] = {}
        self.counter = 0

    def path(self, name: str) -> str:
        self.counter += 1
        return os.path.join(self.root, f"{self.counter:06d}-{name}")

    def prepare(self) -> None:
        traces = os.path.join(self.root, "seed-traces")
        seeds = [["check", "two-phase", "--const", "commit_guard=off"],
                 ["check", "kafka", "--protocol", "kip-101"]]
        for argv in seeds[:1] if self.quick else seeds:
            code, out, err, _ = kmc([*argv, "--json", "--quiet", "--trace-dir", traces], self.root,
                                    timeout=600)
            if code != 12:
                raise SystemExit(f"cannot make a seed trace with {argv}: {err}")
            path = json.loads(out)["violations"][0]["trace_file"]
            name = os.path.basename(path)
            for fmt, suffix in (("json", ".json"), ("itf", ".itf.json"), ("msgpack", ".msgpack")):
                target = os.path.join(traces, f"{fmt}-{name}{suffix}")
                kmc(["trace", "export", path, "--to", fmt, "-o", target], self.root)
                with open(target, "rb") as f:
                    self.seeds[f"{fmt}:{name}"] = f.read()
        scenario_dir = os.path.join(ROOT, "traces", "scenarios")
        for name in sorted(os.listdir(scenario_dir)):
            if name.endswith(".json"):
                with open(os.path.join(scenario_dir, name), "rb") as f:
                    self.scenarios.append(f.read())
        self.checkpoints: dict[str, bytes] = {}
        for label, consts, budget in (("violated", ["RM=4", "commit_guard=off"], 40),
                                      ("holds", ["RM=4"], 300)):
            argv = ["check", "two-phase", *[x for c in consts for x in ("--const", c)], "--quiet",
                    "--json", "--trace-dir", os.path.join(self.root, "ref-traces")]
            code, out, err, _ = kmc(argv, self.root)
            self.reference[label] = _summary(json.loads(out))
            ckpt = os.path.join(self.root, f"seed-{label}.ckpt")
            kmc([*argv, "--max-states", str(budget), "--checkpoint", ckpt], self.root)
            with open(ckpt, "rb") as f:
                self.checkpoints[label] = f.read()
            self.reference[label]["argv"] = argv
        if self.quick:
            return
        argv = ["check", "two-phase", "--const", "RM=6", "--quiet", "--json"]
        code, out, err, _ = kmc([*argv, "--trace-dir", os.path.join(self.root, "ref-traces")],
                                self.root)
        self.reference["signal"] = {**_summary(json.loads(out)), "argv": argv}


def _summary(result: dict[str, Any]) -> dict[str, Any]:
    return {"verdict": result["verdict"], "distinct_states": result["distinct_states"],
            "states_generated": result["states_generated"], "depth": result["depth"],
            "lengths": sorted(v["length"] for v in result.get("violations", []))}


# -- the cases -------------------------------------------------------------------------------------
def case_trace(ws: Workspace, rng: random.Random) -> Outcome:
    key = rng.choice(sorted(ws.seeds))
    data = ws.seeds[key]
    data = mutate_json(rng, data) if key.split(":")[0] in (
        "json",
        "itf") and rng.random() < 0.5 else mutate_bytes(
        rng, data, list(ws.seeds.values()))
    path = ws.path("trace" + (".msgpack" if key.startswith("msgpack") else ".json"))
    with open(path, "wb") as f:
        f.write(data)
    command = rng.choice([["trace", "show"], ["trace", "explain"], ["trace", "diagram"],
                          ["trace", "replay"],
                          ["trace", "export", "--to", rng.choice(["json", "itf", "msgpack"]), "-o",
                           ws.path("export")]])
    argv = [*command[:2], path, *command[2:]]
    code, _, err, seconds = kmc(argv, ws.root)
    return judge("trace", argv, code, err, seconds)


def case_scenario(ws: Workspace, rng: random.Random) -> Outcome:
    data = rng.choice(ws.scenarios)
    data = mutate_json(rng, data) if rng.random() < 0.8 else mutate_bytes(rng, data, ws.scenarios)
    path = ws.path("scenario.json")
    with open(path, "wb") as f:
        f.write(data)
    argv = ["trace", "replay", path, *rng.choice([[], ["--all-protocols"], ["--json"]])]
    code, out, err, seconds = kmc(argv, ws.root)
    outcome = judge("scenario", argv, code, err, seconds)
    if "--json" in argv and code in (65, 66) and not _json_error(out):
        outcome.defects.append("no JSON error object")
    return outcome


def _json_error(out: str) -> bool:
    try:
        return "error" in json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return False


def _mutate_payload(rng: random.Random, payload: dict[str, Any], pack: Any) -> bytes | None:
    """Change one field of a checkpoint's payload and pack it again (a valid checksum), or None."""
    key = rng.choice(sorted(payload))
    value = payload[key]
    if isinstance(value, bytes):
        payload[key] = mutate_bytes(rng, value, []) if value else rng.randbytes(8)
    elif isinstance(value, list) and value and rng.random() < 0.7:
        op = rng.randrange(4)
        i = rng.randrange(len(value))
        if op == 0:
            del value[i]
        elif op == 1:
            value.insert(i, value[rng.randrange(len(value))])
        elif op == 2:
            rng.shuffle(value)
        else:
            value[i] = (mutate_bytes(rng, value[i], []) if isinstance(value[i], bytes)
                        else _interesting(rng))
    else:
        payload[key] = rng.choice([-1, 0, 1, 2**64 - 1, 2**63, -(2**63), 10**6, None, "x", 1.5, [],
                                   {}, {"TCConsistent": 0}, {"TCConsistent": -1}, {"nope": 1},
                                   float("nan")])
    try:
        return pack(payload)
    except (TypeError, ValueError, OverflowError):
        return None


def case_checkpoint(ws: Workspace, rng: random.Random) -> Outcome:
    from checker import checkpoint as ckpt

    label = rng.choice(sorted(ws.checkpoints))
    data = ws.checkpoints[label]
    semantic = rng.random() < 0.6
    # the format before checksums: one msgpack document
    if semantic and not hasattr(ckpt, "unpack"):
        import msgpack

        payload = msgpack.unpackb(data, raw=False, strict_map_key=False)
        data = _mutate_payload(rng, payload, lambda p: msgpack.packb(p, use_bin_type=True)) or data
    elif semantic:
        header, payload = ckpt.unpack(data)
        data = (_mutate_payload(rng, payload, lambda p: ckpt.pack(header, p))
                or mutate_bytes(rng, data, []))
    else:
        data = mutate_bytes(rng, data, list(ws.checkpoints.values()))
    path = ws.path("resume.ckpt")
    with open(path, "wb") as f:
        f.write(data)
    ref = ws.reference[label]
    argv = [*ref["argv"], "--resume", path]
    code, out, err, seconds = kmc(argv, ws.root)
    outcome = judge("checkpoint", argv, code, err, seconds)
    outcome.note = "semantic" if semantic else "bytes"
    if code in (0, 12, 20):
        try:
            got = _summary(json.loads(out))
        except (ValueError, KeyError):
            outcome.defects.append("no result")
            return outcome
        if not semantic and data != ws.checkpoints[label]:
            outcome.defects.append("damaged file resumed")
        expected = {k: v for k, v in ref.items() if k != "argv"}
        if got != expected:
            outcome.defects.append(f"silent wrong result {got} != {expected}")
    return outcome


def case_special(ws: Workspace, rng: random.Random) -> Outcome:
    kind = rng.choice(["fifo", "/dev/zero", "/dev/urandom", "/dev/null", "directory", "dangling",
                       "loop", "empty"])
    if kind == "fifo":
        path = ws.path("fifo")
        os.mkfifo(path)
    elif kind == "directory":
        path = ws.path("dir")
        os.mkdir(path)
    elif kind == "dangling":
        path = ws.path("dangling")
        os.symlink(os.path.join(ws.root, "does-not-exist"), path)
    elif kind == "loop":
        path = ws.path("loop")
        os.symlink(path, path)
    elif kind == "empty":
        path = ws.path("empty.json")
        open(path, "wb").close()
    else:
        path = kind
    command = rng.choice([["trace", "show", path], ["trace", "replay", path],
                          ["trace", "explain", path], ["trace", "export", path, "--to", "itf", "-o",
                                                       ws.path("x.itf.json")],
                          ["check", "two-phase", "--quiet", "--resume", path],
                          ["check", "two-phase", "--quiet", "--workers", "2", "--resume", path]])
    code, _, err, seconds = kmc(command, ws.root, timeout=30)
    outcome = judge("special", command, code, err, seconds)
    outcome.note = kind
    return outcome


def _temporary(directory: str) -> set[str]:
    return {name for name in os.listdir(directory) if name.endswith(".tmp")}


def case_output(ws: Workspace, rng: random.Random) -> Outcome:
    blocker = ws.path("a-file")
    with open(blocker, "w") as f:
        f.write("x")
    directory = ws.path("a-dir")
    os.mkdir(directory)
    places = [os.path.join(blocker, "out.json"), directory,
              os.path.join(ws.root, "n" * 300, "x.json"), "/proc/kmc-cannot-write-here.json",
              os.path.join(blocker, "sub", "x.json")]
    place = rng.choice(places)
    trace = os.path.join(ws.root, "seed-traces",
                         sorted(os.listdir(os.path.join(ws.root, "seed-traces")))[0])
    command = rng.choice([["trace", "export", trace, "--to", "itf", "-o", place],
                          ["trace", "diagram", trace, "-o", place],
                          ["check", "two-phase", "--quiet", "--max-states", "50", "--checkpoint",
                           place]])
    if rng.random() < 0.25:  # a trace directory: an existing directory is a good place for one
        place = rng.choice([p for p in places if p != directory])
        command = ["check", "two-phase", "--const", "commit_guard=off", "--quiet", "--trace-dir",
                   place]
    before = set(os.listdir(directory))
    temporary = _temporary(ws.root)
    code, _, err, seconds = kmc(command, ws.root)
    outcome = judge("output", command, code, err, seconds)
    if set(os.listdir(directory)) != before or _temporary(ws.root) - temporary:
        outcome.defects.append("partial or temporary file left behind")
    with open(blocker) as f:
        if f.read() != "x":
            outcome.defects.append("lost file: an existing file was overwritten")
    return outcome


def case_signal(ws: Workspace, rng: random.Random) -> Outcome:
    ref = ws.reference["signal"]
    workers = rng.choice([[], ["--workers", "2"]])
    ckpt = ws.path("signal.ckpt")
    trace_dir = ws.path("traces")
    argv = [*ref["argv"], *workers, "--trace-dir", trace_dir]
    outcome = Outcome("signal", [*argv, "--checkpoint", ckpt], 0, 0.0)
    for _ in range(rng.choice((1, 2))):
        extra = ["--resume", ckpt] if os.path.exists(ckpt) else ["--checkpoint", ckpt]
        delay = rng.uniform(0.02, 2.5)
        code, out, err, seconds = kmc([*argv, *extra], ws.root, signal_after=delay)
        step = judge("signal", [*argv, *extra], code, err, seconds, stdout=out)
        outcome.defects += step.defects
        outcome.seconds += seconds
        outcome.code = code
        outcome.note += f"SIGINT after {delay:.2f}s -> {code}; "
        if code == 0 or step.defects:
            break
    if not outcome.defects:
        extra = ["--resume", ckpt] if os.path.exists(ckpt) else []
        code, out, err, seconds = kmc([*argv, *extra], ws.root)
        final = judge("signal", [*argv, *extra], code, err, seconds, allowed={0})
        outcome.defects += final.defects
        outcome.seconds += seconds
        if code == 0:
            got = _summary(json.loads(out))
            expected = {k: v for k, v in ref.items() if k != "argv"}
            if got != expected:
                outcome.defects.append(f"silent wrong result {got} != {expected}")
    if {n for n in _temporary(ws.root) if os.path.basename(ckpt) in n}:
        outcome.defects.append("temporary file left behind")
    outcome.seconds = round(outcome.seconds, 3)
    return outcome


def _empty_cases() -> list[tuple[str, list[str]]]:
    """(argument's display name, argv before the empty value) for every argument of every
    subcommand."""
    import argparse

    from kmc.cli import build_parser
    from kmc.options import EMPTY_VALUE_ALLOWED

    cases: list[tuple[str, list[str]]] = []

    def walk(parser: argparse.ArgumentParser, path: list[str]) -> None:
        actions = [a for a in parser._actions if a.nargs != 0
                   and not isinstance(a, argparse._HelpAction)]
        positionals = [a for a in actions if not a.option_strings
                       and not isinstance(a, argparse._SubParsersAction)]
        for action in actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, [*path, name])
                continue
            if EMPTY_VALUE_ALLOWED & set(action.option_strings):
                continue
            name = argparse._get_action_name(action)
            fill = [str(next(iter(p.choices))) if p.choices else "x" for p in positionals]
            if action.option_strings:
                cases.append((name, [*path, *fill, action.option_strings[-1]]))
            else:
                cases.append((name,
                              [*path,
                               *["" if p is action else v
                                 for p, v in zip(positionals, fill, strict=True)]]))

    walk(build_parser(), [])
    return cases


def case_empty(ws: Workspace, rng: random.Random) -> Outcome:
    name, argv = rng.choice(_empty_cases())
    value = rng.choice(["", " ", "\t", "  \n "])
    argv = ([*argv, value] if argv and argv[-1].startswith("-")
            else [a if a else value for a in argv])
    code, _, err, seconds = kmc(argv, ws.root)
    outcome = judge("empty", argv, code, err, seconds)
    if code == 64 and f"argument {name}: an empty value" not in err:
        outcome.defects.append("empty value refused for another reason")
    outcome.note = name
    return outcome


def _huge(rng: random.Random) -> int:
    # up to 4,000 digits: Python itself refuses to write an integer of more than 4,300 as text
    return rng.choice([2**63, -(2**63) - 1, 2**64 - 1, 10**rng.randrange(19, 4000)
                       * rng.choice((1, -1))])


def _replace_an_int(rng: random.Random, doc: Any, value: int, bigint: bool) -> bool:
    """Put ``value`` (as a number or an ITF #bigint) in place of a random integer of ``doc``; False
    if it has none."""
    places: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        items = (node.items() if isinstance(node, dict) else enumerate(node)
                 if isinstance(node, list) else ())
        for key, child in items:
            if (type(child) is int) or (isinstance(child, dict) and set(child) == {"#bigint"}):
                places.append((node, key))
            else:
                walk(child)

    walk(doc)
    if not places:
        return False
    parent, key = rng.choice(places)
    parent[key] = {"#bigint": str(value)} if bigint else value
    return True


def case_number(ws: Workspace, rng: random.Random) -> Outcome:
    value, bigint = _huge(rng), rng.random() < 0.5
    kind = rng.choice(["trace", "trace", "scenario", "checkpoint"])
    if kind == "checkpoint":
        from checker import checkpoint as ckpt

        label = rng.choice(sorted(ws.checkpoints))
        header, payload = ckpt.unpack(ws.checkpoints[label])
        payload[rng.choice(["depth", "generated", "elapsed",
                            "frontier_base"])] = rng.choice([2**63, 2**64 - 1])
        path = ws.path("number.ckpt")
        with open(path, "wb") as f:
            f.write(ckpt.pack(header, payload))
        argv = [*ws.reference[label]["argv"], "--resume", path]
    else:
        keys = (sorted(k for k in ws.seeds if not k.startswith("msgpack")) if kind == "trace"
                else None)
        data = ws.seeds[rng.choice(keys)] if keys else rng.choice(ws.scenarios)
        doc = json.loads(data)
        if not _replace_an_int(rng, doc, value, bigint and kind == "trace"):
            doc.setdefault("constants", {})["RM"] = value
        path = ws.path(f"number-{kind}.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        command = rng.choice([["trace", "show"], ["trace", "explain"], ["trace", "replay"],
                              ["trace", "diagram", "-o", ws.path("d.mmd")],
                              ["trace", "export", "--to", rng.choice(["json", "itf", "msgpack"]),
                               "-o", ws.path("e")]])
        argv = [*command[:2], path, *command[2:]] if kind == "trace" else ["trace", "replay", path]
    code, _, err, seconds = kmc(argv, ws.root)
    outcome = judge("number", argv, code, err, seconds)
    outcome.note = f"{kind} {'#bigint' if bigint else 'number'} of {len(str(abs(value)))} digits"
    return outcome


def case_startup(ws: Workspace, rng: random.Random) -> Outcome:
    blocked = rng.random() < 0.7
    delay = rng.choice([0.0, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, rng.uniform(0, 0.2)])
    argv = ["check", "two-phase", "--const", "RM=5", "--quiet", "--trace-dir", ws.path("traces")]
    code, out, err, seconds = kmc(argv, ws.root, signal_after=delay, block_sigint=blocked)
    outcome = judge("startup", argv, code, err, seconds, stdout=out)
    outcome.note = (f"SIGINT after {delay * 1000:.0f} ms, "
                    f"{'blocked at exec' if blocked else 'not blocked'}")
    return outcome


def _at_once(commands: list[list[str]], cwd: str) -> list[tuple[int | None, str]]:
    """Start every command at the same moment; (exit code, stderr) of each."""
    procs = [subprocess.Popen([sys.executable, "-m", "kmc.cli", *argv], cwd=cwd,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, text=True, errors="replace",
                              preexec_fn=_limit, env={**os.environ, "PYTHONPATH": ROOT})
             for argv in commands]
    results = []
    for proc in procs:
        try:
            _, err = proc.communicate(timeout=CASE_SECONDS)
            results.append((proc.returncode, err))
        except subprocess.TimeoutExpired:
            proc.kill()
            results.append((None, proc.communicate()[1]))
    return results


def case_writers(ws: Workspace, rng: random.Random) -> Outcome:
    if rng.random() < 0.5:  # two exports of different traces or formats to one path
        seeds = sorted(ws.seeds)
        target = ws.path("shared" + rng.choice([".json", ".itf.json", ".msgpack"]))
        commands = []
        for _ in range(2):
            source = ws.path("source"
                             + (".msgpack" if (key := rng.choice(seeds)).startswith("msgpack")
                                else ".json"))
            with open(source, "wb") as f:
                f.write(ws.seeds[key])
            commands.append(["trace", "export", source, "--to",
                             rng.choice(["json", "itf", "msgpack"]), "-o", target])
        check = ["trace", "show", target]
        expected = None
    else:  # two runs checkpointing to one path, then a resume to the reference counts
        ref = ws.reference["holds"]
        target = ws.path("shared.ckpt")
        commands = [[*ref["argv"], "--max-states", str(budget), "--checkpoint", target,
                     "--checkpoint-every", "0.001"]
                    for budget in rng.sample([100, 200, 300, 500], 2)]
        check = [*ref["argv"], "--resume", target]
        expected = {k: v for k, v in ref.items() if k != "argv"}
    results = _at_once(commands, ws.root)
    outcome = Outcome("writers", check, 0, 0.0)
    for code, err in results:
        if code not in (0, 20) or "Traceback" in err:
            outcome.defects.append(f"a writer failed ({code}): {err.strip()[-200:]}")
    code, out, err, seconds = kmc(check, ws.root)
    outcome.code, outcome.seconds = code, round(seconds, 3)
    outcome.defects += judge("writers", check, code, err, seconds).defects
    if code == 0 and expected is not None:
        got = _summary(json.loads(out))
        if got != expected:
            outcome.defects.append(f"silent wrong result {got} != {expected}")
    if _temporary(ws.root):
        outcome.defects.append("temporary file left behind")
    return outcome


CASES = {"trace": case_trace, "scenario": case_scenario, "checkpoint": case_checkpoint,
         "special": case_special, "output": case_output, "signal": case_signal, "empty": case_empty,
         "number": case_number, "startup": case_startup, "writers": case_writers}


def run_cases(seed: int, per_class: int | None = None, seconds: float | None = None,
              classes: tuple[str, ...] = CLASSES, root: str | None = None, log: Any = None,
              quick: bool = False) -> list[Outcome]:
    """Run cases round-robin over ``classes``: ``per_class`` of each, or until ``seconds`` have
    passed."""
    rng = random.Random(seed)
    own = root is None
    root = root or tempfile.mkdtemp(prefix="kmc-fuzz-")
    try:
        ws = Workspace(root, quick=quick or "signal" not in classes)
        ws.prepare()
        outcomes: list[Outcome] = []
        started = time.monotonic()
        n = 0
        while True:
            if per_class is not None and n >= per_class * len(classes):
                break
            if seconds is not None and time.monotonic() - started >= seconds:
                break
            cls = classes[n % len(classes)]
            outcome = CASES[cls](ws, random.Random(rng.getrandbits(64)))
            outcomes.append(outcome)
            if log is not None and outcome.defects:
                print(json.dumps(outcome.__dict__), file=log, flush=True)
            n += 1
            if n % 50 == 0:  # keep the workspace small
                for name in os.listdir(root):
                    if name[:6].isdigit():
                        full = os.path.join(root, name)
                        if os.path.isdir(full) and not os.path.islink(full):
                            shutil.rmtree(full, ignore_errors=True)
                        else:
                            with contextlib.suppress(OSError):
                                os.unlink(full)
        return outcomes
    finally:
        if own:
            shutil.rmtree(root, ignore_errors=True)


def summarize(outcomes: list[Outcome]) -> dict[str, Any]:
    by_class: dict[str, dict[str, Any]] = {}
    for cls in CLASSES:
        mine = [o for o in outcomes if o.cls == cls]
        if not mine:
            continue
        kinds = Counter(d.split(" {")[0] for o in mine for d in o.defects)
        python_startup = sum(1 for o in mine if o.defects == [STARTUP])
        by_class[cls] = {
            "cases": len(mine),
            "defects": sum(1 for o in mine if o.defects and o.defects != [STARTUP]),
            "python_startup": python_startup,
            "defect_kinds": dict(kinds),
            "exit_codes": dict(sorted(Counter(str(o.code) for o in mine).items())),
            "max_seconds": max(o.seconds for o in mine),
        }
    return {"cases": len(outcomes), "defects": sum(1 for o in outcomes if o.defects and o.defects
                                                   != [STARTUP]),
            "python_startup": sum(1 for o in outcomes if o.defects == [STARTUP]),
            "by_class": by_class}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=300.0, help="how long to fuzz")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--classes", default=",".join(CLASSES))
    parser.add_argument("--out", help="write the summary and every defect as JSON here")
    args = parser.parse_args()
    classes = tuple(c for c in args.classes.split(",") if c)
    outcomes = run_cases(args.seed, seconds=args.seconds, classes=classes, log=sys.stderr)
    summary = summarize(outcomes)
    summary.update(seed=args.seed, seconds=args.seconds, load=os.getloadavg(),
                   defect_cases=[o.__dict__ for o in outcomes if o.defects][:200])
    print(f"{'class':<12}{'cases':>7}{'defects':>9}{'py-start':>10}  exit codes")
    for cls, row in summary["by_class"].items():
        print(f"{cls:<12}{row['cases']:>7}{row['defects']:>9}{row['python_startup']:>10}  "
              f"{row['exit_codes']}  {row['defect_kinds'] or ''}")
    print(f"{'all':<12}{summary['cases']:>7}{summary['defects']:>9}{summary['python_startup']:>10}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(summary, f, indent=1)
    return 1 if summary["defects"] else 0


if __name__ == "__main__":
    sys.exit(main())
