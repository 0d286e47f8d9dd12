"""The compiled path: a model's successor kernel (``Model.kernel``) and the breadth-first search in
C.

A model that has a kernel keeps a C file beside its readable model, rule for rule, which includes
the engine's search (``checker/kernel_search.h``). This module compiles it with the system C
compiler at first use (``$KMC_CC``, else ``$CC``, else ``cc``), caches the shared library per user
(``$XDG_CACHE_HOME/kmc/kernels``, else ``~/.cache/kmc/kernels``) under a hash of both sources, the
configuration's compile-time constants (those that shape the state: ``KernelSource.defines``), the
compiler and its flags, and loads it with ctypes (the standard library: no new dependency). The
configuration's other bounds and flags are run-time constants (``KernelSource.config``): written
into a copy of the library beside it (``configured``, no compile), so one compile serves every
value of them. ``KernelBFS`` then runs the level loop of ``checker.levels`` with a
level step in C (in ``--workers N`` threads), so budgets, progress and the result are the local
engine's. The search keeps 64-bit fingerprints, parent links and the frontier, not every state; a
counterexample is replayed on the kernel from its initial state by the links (``km_replay``), its
states unpacked into the readable model's, and replayed on the readable model
(``checker.search.rebuild_trace``): it is printed and saved as the readable path prints it.

``why_not(model, options)`` says why a search cannot take this path (the caller then runs the
readable model): a model without a kernel, an option the kernel does not honour, a user
``--property``, no C compiler.

The interface a kernel plugs into is ``spec.model.KernelSource`` (the reference models',
``spec/kafka/kernel.c``): its C file defines ``km_state`` (fixed-width fields, no padding),
``KM_MAX_SUCC``, ``KM_INVARIANTS``, ``km_successors``, ``km_violations`` and ``km_canonical``,
optionally ``km_reduce`` (``--reduce dead``, ``KernelSource.reductions``), and the Python side
packs, unpacks and names the actions. A kernel that meets a state past one of its fixed capacities
stops the search with ``KernelCapacityError`` (one line), never a different search.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import struct
import subprocess
import tempfile
import time
from functools import partial
from typing import Any

from checker.kernel_cache import cache_dir, mark_used, prune, write_atomically
from checker.levels import MEMORY_BUDGET, LevelSearch, run_levels
from checker.result import (
    CheckResult,
    Collision,
    Discovery,
    OutDegree,
    Verdict,
    Violation,
    amdahl_speedup,
    collision_estimates,
)
from checker.search import (
    Progress,
    SearchOptions,
    rebuild_trace,
    uses_bounds,
    uses_symmetry,
    validate_initial,
    verdict_of,
)
from spec.errors import EnvironmentMissingError, ModelError, OutputError, UsageError
from spec.model import Action, KernelSource, Model

HERE = os.path.dirname(os.path.abspath(__file__))
SEARCH_HEADER = os.path.join(HERE, "kernel_search.h")
CFLAGS = ("-shared", "-fPIC", "-std=c11", "-pthread", "-D_POSIX_C_SOURCE=200809L")
#: the optimisation levels ``$KMC_KERNEL_OPT`` may name; unset, a kernel is compiled at -O2. The
#: test suite compiles a few hundred small configurations once each and sets -Og
#: (tests/conftest.py): a Kafka kernel's compile 0.49 s of CPU against 0.69 s at -O1 and 1.17 s
#: at -O2, for slower code than -O1 that the suite's small searches do not notice (bench/NOTES.md)
OPT_LEVELS = ("-O0", "-Og", "-O1", "-O2", "-O3")
#: ``--kernel``: auto (the kernel where it applies, else the readable model), on (the kernel or an
#: error), off
MODES = ("auto", "on", "off")


class KernelUnavailable(EnvironmentMissingError):
    """``--kernel on`` and the kernel cannot run here (no C compiler, or it failed): one line, exit
    69."""


class KernelCapacityError(ModelError):
    """The kernel met a state past one of its fixed capacities (the search stops rather than
    differ): one line."""


#: a kernel's capacity codes (``out->error`` in its C file), what each means
CAPACITY = {1: "more messages in flight than the network's slots", 2: "a log longer than the "
                                                                      "records bound",
            3: "a message or branch it does not compile",
            4: "a consumer's consumed records past its slots"}


def capacity_message(spec: KernelSource, code: int) -> str:
    what = CAPACITY.get(code, f"capacity code {code}")
    return (f"the compiled kernel {os.path.basename(spec.source)} stopped: {what}; "
            "run this configuration with --kernel off")


def compiler() -> str:
    return os.environ.get("KMC_CC") or os.environ.get("CC") or "cc"


def optimisation() -> str:
    """The compiler's optimisation level: ``$KMC_KERNEL_OPT`` or -O2; anything else is refused with
    one line (exit 64)."""
    level = os.environ.get("KMC_KERNEL_OPT") or "-O2"
    if level not in OPT_LEVELS:
        raise UsageError(f"KMC_KERNEL_OPT={level!r} is not an optimisation level: set it to one of "
                         f"{', '.join(OPT_LEVELS)}, or unset it for -O2")
    return level


class Kernel:
    """A compiled kernel, loaded: the C functions with their ctypes signatures, and the model's
    ``KernelSource``."""

    def __init__(self, spec: KernelSource, library: str) -> None:
        self.spec = spec
        self.library = library
        lib = self.lib = ctypes.CDLL(library)
        p, u8p = ctypes.c_void_p, ctypes.c_char_p
        i64p = ctypes.POINTER(ctypes.c_int64)
        sig = {
            "km_state_bytes": ([], ctypes.c_uint64), "km_max_successors": ([], ctypes.c_uint64),
            "km_invariant_count": ([], ctypes.c_uint64),
            "km_new": ([ctypes.c_uint32, ctypes.c_int, ctypes.c_int], p), "km_free": ([p], None),
            "km_add_initial": ([p, u8p], ctypes.c_int64), "km_expand_level": ([p], ctypes.c_int),
            "km_counts": ([p, i64p], None), "km_found": ([p, i64p], None),
            "km_degrees": ([p, ctypes.POINTER(ctypes.c_uint64)], None),
            "km_replay": ([p, ctypes.c_int64, ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint32),
                           ctypes.c_int64], ctypes.c_int64),
            "km_set_keep": ([p, ctypes.c_int], ctypes.c_int),
            "km_set_threads": ([p, ctypes.c_int], ctypes.c_int),
            "km_set_spill": ([p, ctypes.c_char_p, ctypes.c_uint64], ctypes.c_int),
            "km_memory": ([p, ctypes.POINTER(ctypes.c_uint64)], None),
            "km_smallest_gap": ([p], ctypes.c_uint64),
            "km_parallel_seconds": ([p], ctypes.c_double),
            "km_get_states": ([p, ctypes.c_uint64, ctypes.c_uint64, p], None),
            "km_successors_of": ([u8p, ctypes.POINTER(ctypes.c_uint32), ctypes.c_char_p],
                                 ctypes.c_uint32),
            "km_violations_of": ([u8p], ctypes.c_uint32),
            "km_canonical_of": ([ctypes.c_char_p], None),
            "km_set_reduce": ([p, ctypes.c_int], ctypes.c_int), "km_error": ([p], ctypes.c_uint32),
            "km_reduce_of": ([ctypes.c_char_p], None), "km_config_names": ([], ctypes.c_char_p),
        }
        for name, (args, res) in sig.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = args, res
        names = " ".join(name for name, _ in spec.config)
        if lib.km_config_names().decode().strip() != names:
            raise ModelError(f"kernel {spec.source}: the C file's run-time constants are "
                             f"{lib.km_config_names().decode().strip()!r}, its Python side says "
                             f"{names!r}: make them agree (KM_CONFIG)")
        self.state_bytes = int(lib.km_state_bytes())
        self.max_successors = int(lib.km_max_successors())
        self.invariant_count = int(lib.km_invariant_count())
        if self.state_bytes != spec.state_bytes or self.invariant_count != len(spec.invariants):
            raise ModelError(f"kernel {spec.source}: the C file's state is {self.state_bytes} "
                             f"bytes and {self.invariant_count} invariants, its Python side says "
                             f"{spec.state_bytes} and {len(spec.invariants)}: make them agree")

    # -- one state at a time (the equivalence tests) -----------------------------------------------
    def successors(self, state: Any) -> list[tuple[Action, Any]]:
        """The kernel's (action, successor) pairs of a readable state, unpacked into the readable
        model's terms."""
        n, size = self.max_successors, self.state_bytes
        actions = (ctypes.c_uint32 * n)()
        out = ctypes.create_string_buffer(n * size)
        count = self.lib.km_successors_of(self.spec.pack(state), actions, out)
        if count > n:
            raise KernelCapacityError(capacity_message(self.spec, 0xFFFFFFFF - count))
        raw = out.raw
        return [(self.spec.action(actions[i]), self.spec.unpack(raw[i * size:(i + 1) * size]))
                for i in range(count)]

    def violated(self, state: Any) -> set[str]:
        """The compiled invariants ``state`` violates."""
        mask = self.lib.km_violations_of(self.spec.pack(state))
        return {name for i, name in enumerate(self.spec.invariants) if mask >> i & 1}

    def reduced(self, state: Any) -> Any:
        """The state ``--reduce dead`` stores (``km_reduce``), unpacked."""
        buf = ctypes.create_string_buffer(self.spec.pack(state), self.state_bytes)
        self.lib.km_reduce_of(buf)
        return self.spec.unpack(buf.raw)

    def canonical(self, state: Any) -> Any:
        buf = ctypes.create_string_buffer(self.spec.pack(state), self.state_bytes)
        self.lib.km_canonical_of(buf)
        return self.spec.unpack(buf.raw)


def build_command(spec: KernelSource, cc: str, output: str,
                  extra: tuple[str, ...] = ()) -> list[str]:
    defines = [f"-D{name}={value}" for name, value in spec.defines] + list(extra)
    return [cc, optimisation(), *CFLAGS, f"-I{HERE}", *defines, spec.source, "-o", output]


def cache_key(spec: KernelSource, extra_flags: tuple[str, ...] = ()) -> str:
    """The compiled library's key: a hash of both sources, the compiler, its flags and the
    configuration's compile-time constants (``spec.defines``); never its run-time constants
    (``spec.config``: one library serves every value of them)."""
    key = hashlib.sha256()
    for path in (spec.source, SEARCH_HEADER):
        with open(path, "rb") as f:
            key.update(f.read())
    found = shutil.which(compiler())
    key.update(repr((found, optimisation(), CFLAGS, spec.defines, extra_flags)).encode())
    return key.hexdigest()[:24]


def load(spec: KernelSource, extra_flags: tuple[str, ...] = ()) -> Kernel:
    """The kernel of ``spec``, compiled now or taken from the cache, in the copy that holds its
    run-time constants (``configured``); ``KernelUnavailable`` (one line) when there is no C
    compiler or it fails. ``extra_flags``: more compiler flags (the tests' mutants:
    ``-DKM_MUTANT=1``)."""
    cc = compiler()
    found = shutil.which(cc)
    if found is None:
        raise KernelUnavailable(f"no C compiler: {cc!r} is not on the PATH (set KMC_CC to one, or "
                                "use --kernel off)")
    stem = os.path.splitext(os.path.basename(spec.source))[0]
    library = os.path.join(cache_dir(), f"{stem}-{cache_key(spec, extra_flags)}.so")
    try:
        return Kernel(spec, _cached(spec, cc, found, library, extra_flags))
    except OSError:
        # pruned by another run between the check and the load (checker.kernel_cache): compiled
        # again, once
        return Kernel(spec, _cached(spec, cc, found, library, extra_flags))


def _cached(spec: KernelSource, cc: str, found: str, library: str,
            extra_flags: tuple[str, ...]) -> str:
    """The path of ``spec``'s configured library, ``library`` compiled into the cache first when it
    is not there (then the cache is pruned: ``checker.kernel_cache``)."""
    directory = os.path.dirname(library)
    if os.path.exists(library):
        mark_used(library)
    else:
        _cache_write(directory, library, lambda tmp: _compile(spec, cc, found, tmp, extra_flags))
        prune(directory)
    return configured(spec, library)


def _cache_write(directory: str, path: str, write: Any) -> None:
    """``path`` in the kernel cache, made by ``write(tmp)`` (``kernel_cache.write_atomically``);
    ``KernelUnavailable`` (one line) when the cache cannot be written."""
    try:
        write_atomically(directory, path, write)
    except OSError as exc:
        raise KernelUnavailable(f"cannot write the kernel cache {directory}: "
                                f"{exc.strerror}") from None


def _compile(spec: KernelSource, cc: str, found: str, output: str,
             extra_flags: tuple[str, ...]) -> None:
    done = subprocess.run(build_command(spec, found, output, extra_flags), capture_output=True,
                          text=True)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["no message"]
        # the error, not its context
        first = next((line for line in lines if "error" in line), lines[0])
        raise KernelUnavailable(f"the C compiler {cc} failed on "
                                f"{os.path.basename(spec.source)}: {first}")


#: the mark before the run-time constants in a compiled library (``checker/kernel_search.h``,
#: ``KM_CONFIG_MARK``, 16 bytes)
CONFIG_MARK = b"kmc config v1".ljust(16, b"\0")


def configured(spec: KernelSource, library: str) -> str:
    """The copy of ``library`` that holds ``spec``'s run-time constants (``spec.config``, written
    after ``CONFIG_MARK``), in the cache beside it; ``library`` itself when it has none. Each
    configuration's copy is a library of its own, loaded on its own: two configurations in one
    process (threads, the Spark driver, a story's replay) never see each other's constants, and a
    Spark executor gets them with the library's bytes."""
    if not spec.config:
        return library
    values = struct.pack(f"<{len(spec.config)}i", *(value for _, value in spec.config))
    digest = hashlib.sha256(repr(spec.config).encode()).hexdigest()[:12]
    copy = f"{os.path.splitext(library)[0]}-{digest}.so"
    if os.path.exists(copy):
        mark_used(copy)
        return copy
    with open(library, "rb") as f:
        data = f.read()
    at = data.find(CONFIG_MARK)
    if at < 0 or data.find(CONFIG_MARK, at + 1) >= 0:
        raise KernelUnavailable(f"the compiled kernel {os.path.basename(library)} has "
                                f"{'no' if at < 0 else 'more than one'} run-time constants' mark")
    data = data[:at + 16] + values + data[at + 16 + len(values):]

    def write(tmp: str) -> None:
        with open(tmp, "wb") as f:
            f.write(data)

    _cache_write(os.path.dirname(library), copy, write)
    return copy


def _compiled_invariant(inv: Any, names: tuple[str, ...]) -> bool:
    """A built-in invariant (defined in the invariants package) of a name the kernel compiles: a
    user's ``--property`` of the same name is code the kernel has not got."""
    holds = inv.holds.func if isinstance(inv.holds, partial) else inv.holds
    return inv.name in names and getattr(holds, "__module__", "").startswith("invariants.")


def why_not(model: Model, options: SearchOptions, engine: str = "local",
            spark_transport: str = "arrow") -> str | None:
    """Why this search must run on the readable model (one phrase), or None: the kernel can run it
    on ``engine`` (local: ``KernelBFS``; parallel: ``KernelBFS`` too, in N threads of one process,
    ``checker.parallel.run_engine``; spark: the executors expand packed states,
    ``checker.spark.kernel_step``, on the arrow transport only; its run directories hold packed
    states, and record the kernel that wrote them)."""
    if engine == "spark" and spark_transport != "arrow":
        return ("the Spark blocks transport carries readable states (the kernel runs on the arrow "
                "transport)")
    spec = model.kernel()
    if spec is None:
        return f"model {model.name} has no compiled kernel"
    if spec.unsupported:
        return spec.unsupported
    if uses_bounds(model):
        return "the model has a state constraint the kernel does not compile"
    for inv in options.invariants:
        if not _compiled_invariant(inv, spec.invariants):
            return f"property {inv.name} is not compiled into the kernel"
    if options.symmetry and not spec.symmetry:
        return "the kernel has no --symmetry"
    reduce_other = options.reduce != "none" and options.reduce not in spec.reductions
    for wanted, what in ((reduce_other, f"--reduce {options.reduce}"),
                         # a Spark run directory holds the path's states (``checker.spark.resume``)
                         (engine != "spark" and (options.resume_from or options.checkpoint_path),
                          "checkpoints"),
                         (options.max_memory_mb is not None,
                          "--max-memory (a checkpoint when it runs out)"),
                         (options.coverage, "--coverage"), (options.keep_graph, "the state graph")):
        if wanted:
            return f"{what} is not supported by the kernel"
    return None


class KernelBFS(LevelSearch):
    """The local engine's search with the level step in C (``km_expand_level``); the same figures,
    verdicts and counterexamples as ``checker.bfs.LocalBFS``, in ``threads`` threads (the same at
    any count).

    It stores what TLC stores (``checker/kernel_search.h``): a 64-bit fingerprint of each state,
    its parent's index and its position among the parent's successors, and the frontier whole; a
    counterexample is replayed on the kernel from its initial state (``km_replay``), then on the
    readable model. The next level goes on to an unlinked file in the temporary directory
    (``tempfile.gettempdir()``: ``$TMPDIR``) past ``spill_bytes``."""

    engine = "local"
    #: bytes of the next level held in memory before it spills to a file
    spill_bytes = 1 << 30

    def __init__(self, model: Model, options: SearchOptions, kernel: Kernel,
                 threads: int = 1) -> None:
        self.model = model
        self.threads = threads
        self.options = options
        self.kernel = kernel
        self.spec = kernel.spec
        self.symmetry = uses_symmetry(model, options)
        self.invariants = options.safety_invariants()
        names = self.spec.invariants
        self.checked = 0
        for inv in self.invariants:
            self.checked |= 1 << names.index(inv.name)
        from checker.levels import default_memory_budget_mb

        self.memory_budget = options.max_memory_mb or default_memory_budget_mb()
        self._discovered: dict[str, Discovery] = {}

    def run(self) -> CheckResult:
        self._started = time.monotonic()
        self._cpu_started = time.process_time()  # every thread's
        lib = self.kernel.lib
        handle = lib.km_new(self.checked, int(self.options.check_deadlock), int(self.symmetry))
        if not handle:
            raise MemoryError("the kernel could not allocate its search")
        try:
            self.handle = handle
            self.spill_dir = tempfile.gettempdir()
            if not (lib.km_set_keep(handle, 0) and lib.km_set_threads(handle, self.threads)
                    and lib.km_set_spill(handle, os.fsencode(self.spill_dir), self.spill_bytes)):
                raise MemoryError(f"the kernel could not set up {self.threads} threads")
            if not lib.km_set_reduce(handle, int(self.options.reduce == "dead")):
                raise ModelError(f"kernel {self.spec.source} does not compile --reduce "
                                 f"{self.options.reduce}")
            inits = list(self.model.init_states())
            validate_initial(self.model, inits)
            self.initial_generated = len(inits)
            for state in inits:
                if lib.km_add_initial(handle, self.spec.pack(state)) == -2:
                    raise MemoryError("the kernel ran out of memory")
            st = _Counters()
            self._refresh(st)
            st.depth = 1 if st.distinct else 0
            self._report(st)
            return run_levels(self, st)
        finally:
            lib.km_free(handle)

    def _refresh(self, st: _Counters) -> None:
        counts = (ctypes.c_int64 * 6)()
        self.kernel.lib.km_counts(self.handle, counts)
        st.distinct, st.generated = counts[0], counts[1] + self.initial_generated
        st.queue, st.deadlock, st.bytes = counts[3] - counts[2], counts[4], counts[5]
        n = max(1, len(self.spec.invariants))
        found = (ctypes.c_int64 * n)()
        self.kernel.lib.km_found(self.handle, found)
        st.found = {name: found[i] for i, name in enumerate(self.spec.invariants)
                    if self.checked >> i & 1 and found[i] >= 0}

    # -- the hooks of the level loop (checker.levels) ----------------------------------------------
    writes_checkpoints = False

    def queue(self, st: _Counters) -> int:
        return st.queue

    def distinct(self, st: _Counters) -> int:
        return st.distinct

    def should_stop(self, st: _Counters) -> bool:
        for name in st.found:
            self._discovered.setdefault(name, Discovery(st.distinct, st.generated, st.depth))
        if not self.options.stop_at_first:
            if not self.options.stop_when_all_found:
                return False
            every = bool(self.invariants) and len(st.found) == len(self.invariants)
            return every and (st.deadlock >= 0 or not self.options.check_deadlock)
        return bool(st.found) or st.deadlock >= 0

    def expand_level(self, st: _Counters) -> None:
        before = st.distinct
        status = self.kernel.lib.km_expand_level(self.handle)
        if status == -2:
            raise MemoryError("the kernel ran out of memory")
        if status == -3:
            raise KernelCapacityError(capacity_message(self.spec,
                                                       self.kernel.lib.km_error(self.handle)))
        if status == -4:
            raise OutputError(f"the kernel could not spill its next level to {self.spill_dir} "
                              "(set TMPDIR to a directory with room)", cannot_create=False)
        self._refresh(st)
        if st.distinct > before:
            st.depth += 1

    def after_level(self, st: _Counters) -> None:
        from checker.levels import rss_mb

        self._report(st)
        if rss_mb() > self.memory_budget:
            from checker.levels import BudgetExceeded

            raise BudgetExceeded(f"{MEMORY_BUDGET} of {self.memory_budget:.0f} MB ran out at depth "
                                 f"{st.depth}")

    def _report(self, st: _Counters) -> None:
        if self.options.progress:
            self.options.progress(Progress(st.depth, st.generated, st.distinct, st.queue,
                                           self.elapsed()))

    # -- the result --------------------------------------------------------------------------------
    def _trace(self, index: int, name: str, explanation: Any) -> Any:
        """The path to state ``index``, replayed on the kernel from its initial state
        (``km_replay``), unpacked and replayed on the readable model (``rebuild_trace``)."""
        room, size = 1 << 16, self.kernel.state_bytes
        states = ctypes.create_string_buffer(room * size)
        codes = (ctypes.c_uint32 * room)()
        length = self.kernel.lib.km_replay(self.handle, index, states, codes, room)
        if length < 0:
            raise ModelError(f"the compiled kernel {os.path.basename(self.spec.source)} could not "
                             f"replay the path to state {index} ({length}): its search and its "
                             "successors disagree; run with --kernel off")
        raw = states.raw
        path = [(hash(self.spec.unpack(raw[k * size:(k + 1) * size])), k - 1)
                for k in range(length)]
        actions = [self.spec.action(codes[k]) for k in range(length - 1)]
        return rebuild_trace(self.model, path, actions, self.options, name, explanation)

    def finish(self, st: _Counters, reason: str | None, checkpoint_file: str | None) -> CheckResult:
        elapsed = self.elapsed()
        self._report(st)
        violations = []
        by_name = {inv.name: inv for inv in self.invariants}
        for name, index in sorted(st.found.items(), key=lambda item: (item[1], item[0])):
            trace = self._trace(index, name, by_name[name].why)
            violations.append(Violation(name, "safety", trace,
                                        discovered=self._discovered.get(name)))
        if st.deadlock >= 0:
            trace = self._trace(st.deadlock, "deadlock", lambda s: "deadlock: no action is enabled "
                                                                   "in the last state")
            violations.append(Violation("deadlock", "deadlock", trace))
        verdict = verdict_of(violations, reason)
        result = CheckResult(
            model=self.model.name, constants=dict(self.model.constants), verdict=verdict,
            distinct_states=st.distinct, states_generated=st.generated, depth=st.depth,
            seconds=elapsed, violations=violations,
            invariants=[inv.name for inv in self.invariants], engine=self.engine,
            symmetry=self.symmetry, reason=reason if verdict is Verdict.UNDETERMINED else None,
            queue=st.queue, checkpoint_file=checkpoint_file, workers=self.threads,
        )
        degrees = (ctypes.c_uint64 * (self.kernel.max_successors + 1))()
        self.kernel.lib.km_degrees(self.handle, degrees)
        histogram = {d: int(n) for d, n in enumerate(degrees) if n}
        if histogram:
            result.out_degree = OutDegree.of(histogram)
        if self.options.reduce == "dead":
            from checker.dead import report

            result.extra["reduction"] = report(self.model)
        if self.threads > 1:
            self._add_serial_share(result)
        memory = (ctypes.c_uint64 * 5)()
        self.kernel.lib.km_memory(self.handle, memory)
        # TLC's estimates; the smallest gap sorts the visited set: after the traces
        gap = int(self.kernel.lib.km_smallest_gap(self.handle))
        optimistic = collision_estimates(st.distinct, st.generated).optimistic
        result.collision = Collision(optimistic, 1.0 / gap if gap else None)
        result.extra["path"] = {"path": "kernel", "kernel": os.path.basename(self.spec.source),
                                "library": os.path.basename(self.kernel.library),
                                "state_bytes": self.kernel.state_bytes, "kernel_bytes": st.bytes,
                                "fingerprints": True, "threads": self.threads,
                                "visited_bytes": int(memory[0]), "link_bytes": int(memory[1]),
                                "frontier_bytes": int(memory[2]),
                                "spilled_bytes": int(memory[4])}
        return result


    def _add_serial_share(self, result: CheckResult) -> None:
        """The share of the search's CPU time outside the threads' parts (the merges in frontier
        order, the level's reads, Python), and what Amdahl's law predicts from it (as
        ``checker.parallel`` reports its workers')."""

        total = time.process_time() - self._cpu_started
        parallel = float(self.kernel.lib.km_parallel_seconds(self.handle))
        share = round(min(1.0, max(0.0, (total - parallel) / total)), 5) if total > 0 else 1.0
        result.extra["serial_share"] = share
        result.extra["amdahl_speedup"] = {str(n): round(amdahl_speedup(share, n), 2)
                                          for n in (2, 16, 64)}


class _Counters:
    """The figures of a kernel search between its levels (read from the C side after each level)."""

    depth = 0
    distinct = 0
    generated = 0
    queue = 0
    deadlock = -1
    bytes = 0
    found: dict[str, int]

    def __init__(self) -> None:
        self.found = {}


def run(model: Model, options: SearchOptions, mode: str = "auto",
        engine: str = "local", threads: int = 1) -> CheckResult | str:
    """The search on the kernel, or why not (a phrase: the caller runs the readable model). ``mode``
    on: a reason is an error (``KernelUnavailable``, one line). ``engine``: the engine asked for
    (``why_not``); the search runs in this process either way, in ``threads`` threads
    (``checker.parallel.run_engine`` passes ``--workers N``)."""
    reason = why_not(model, options, engine)
    kernel = None
    if reason is None:
        try:
            kernel = load(model.kernel())
        except KernelUnavailable as exc:
            reason = str(exc)
    if kernel is None:
        if mode == "on":
            raise KernelUnavailable(f"--kernel on: {reason}")
        return reason
    return KernelBFS(model, options, kernel, threads).run()
