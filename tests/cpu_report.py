"""Per-test CPU time, for finding where a tier's time goes on a shared machine (wall time is noise
there).

Load it with ``python3 -m pytest -p tests.cpu_report --cpu-report=cpu.tsv ...``: each test's setup,
call and teardown are charged the CPU (user + system seconds) spent in them by

- the pytest process itself (``time.process_time()``, every thread),
- its children that ended and were waited for (``resource.getrusage(RUSAGE_CHILDREN)``: subprocess
  CLI runs, forked workers), and
- its children still alive (``/proc/<pid>/stat`` utime + stime + the children they waited for: a
  Spark JVM that lives for the whole session is charged to the tests that kept it busy, not to the
  session's end).

A child that ends without being waited for by this process (the Spark JVM stopped at the session's
end) takes its time out of the live sum; the test it ends in is charged nothing rather than a
negative time, so the CPU such a child spent after the previous test is lost (small: an idle JVM
spends about 0.1 s a minute).

The report is one line a test, most expensive first: CPU seconds, the marker tier (``slow`` or
``fast``), the test id, its wall seconds and when it started (wall seconds after the session
started: where a process waited, and where the two processes of ``-n 2`` ran side by side,
``bench/suite_packing.py``); the last lines give the totals of each tier, and the machine's CPU
over the session (``machine_cpu``: the JVMs no test waits for are in it, and so is anything else
that ran). Under ``pytest -n N``
(pytest-xdist) each worker writes its own report, FILE.gw0, FILE.gw1, ... (the controller runs no
test and writes none). Linux only (``/proc``).
"""

from __future__ import annotations

import os
import resource
import time

import pytest

_TICK = os.sysconf("SC_CLK_TCK")


def _live_descendants_cpu(pid: int) -> float:
    """CPU seconds of the live descendants of ``pid`` (their own time and that of the children they
    waited for)."""
    total = 0.0
    stack = [pid]
    while stack:
        parent = stack.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{parent}/task/{tid}/children") as fh:
                    children = [int(c) for c in fh.read().split()]
            except OSError:
                continue
            for child in children:
                try:
                    with open(f"/proc/{child}/stat") as fh:
                        fields = fh.read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                # fields[0] is the state (field 3 of proc(5)); utime, stime, cutime, cstime are
                # fields 14 to 17
                total += sum(int(f) for f in fields[11:15]) / _TICK
                stack.append(child)
    return total


def machine_cpu() -> float:
    """CPU seconds every process of the machine has spent since boot (``/proc/stat``: user, nice,
    system, irq and softirq): around a session it counts what no test's figure can, the processes
    no test waits for (a standalone cluster's daemons and executors) and whatever else ran."""
    with open("/proc/stat") as fh:
        fields = fh.readline().split()
    return sum(int(fields[i]) for i in (1, 2, 3, 6, 7)) / _TICK


def _cpu_now() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime + _live_descendants_cpu(
        os.getpid())


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--cpu-report", metavar="FILE", default=None,
                     help="write each test's CPU seconds (this process and its children) to FILE")


class _Recorder:
    def __init__(self, path: str) -> None:
        self.path = path
        self.cpu: dict[str, float] = {}
        self.tier: dict[str, str] = {}
        self.wall: dict[str, tuple[float, float]] = {}  # (wall seconds, start after the session's)
        self.start = 0.0
        self.wall_start = 0.0
        self.machine_start = 0.0

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None):
        before = _cpu_now()
        started = time.monotonic()
        yield
        self.wall[item.nodeid] = (time.monotonic() - started, started - self.wall_start)
        # a child that ends without this process waiting for it (the Spark JVM at the session's end,
        # a browser) takes the CPU it was charged while it lived out of the sum: that test is
        # charged nothing, not a negative time
        self.cpu[item.nodeid] = max(0.0, _cpu_now() - before)
        self.tier[item.nodeid] = "slow" if item.get_closest_marker("slow") else "fast"

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.start = _cpu_now()
        self.wall_start = time.monotonic()
        self.machine_start = machine_cpu()

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        whole = _cpu_now() - self.start
        machine = machine_cpu() - self.machine_start
        session_wall = time.monotonic() - self.wall_start
        rows = sorted(self.cpu.items(), key=lambda kv: -kv[1])
        with open(self.path, "w") as fh:
            for nodeid, seconds in rows:
                wall, start = self.wall[nodeid]
                fh.write(f"{seconds:.2f}\t{self.tier[nodeid]}\t{nodeid}\t{wall:.2f}\t{start:.1f}\n")
            for tier in ("fast", "slow"):
                total = sum(s for n, s in self.cpu.items() if self.tier[n] == tier)
                count = sum(1 for n in self.cpu if self.tier[n] == tier)
                fh.write(f"# {tier}: {count} tests, {total:.1f} s CPU\n")
            fh.write(f"# session (collection and all tests): {whole:.1f} s CPU\n")
            fh.write(f"# the machine (every process) during this session: {machine:.1f} s CPU in "
                     f"{session_wall:.1f} s of wall\n")


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("--cpu-report")
    worker = getattr(config, "workerinput", {}).get("workerid")
    # under pytest -n N each worker writes its own report: FILE.gw0, FILE.gw1, ...
    if path and worker:
        path = f"{path}.{worker}"
    elif getattr(config.option, "numprocesses", None):
        return  # the controller of pytest -n N: it runs no test
    if path:
        config.pluginmanager.register(_Recorder(path), "cpu-report-recorder")
