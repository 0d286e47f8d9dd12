"""The one level loop (``checker.levels.run_levels``): what it does around an engine's level step,
checked with a counting engine, and that no other module of ``checker/`` runs a level loop of its
own."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from checker.levels import BudgetExceeded, LevelSearch, run_levels
from checker.search import SearchOptions
from spec.two_phase import TwoPhase


@dataclass
class _State:
    depth: int = 0
    frontier: int = 1
    distinct: int = 1
    saved: list = field(default_factory=list)


class _Counting(LevelSearch):
    """Each level adds ``grow`` states; a level past ``stop_after`` finds a violation, one at
    ``raise_at`` raises (a budget inside the level, or Ctrl-C)."""

    def __init__(self, options: SearchOptions, levels: int = 5, stop_after: int | None = None,
                 raise_at: tuple[int, BaseException] | None = None, saves: bool = True) -> None:
        self.model = TwoPhase(2)
        self.options = options
        self.levels = levels
        self.stop_after = stop_after
        self.raise_at = raise_at
        self.writes_checkpoints = saves
        self._started = 0.0
        self.clock = 0.0

    def elapsed(self) -> float:
        return self.clock

    def queue(self, st: _State) -> int:
        return st.frontier

    def distinct(self, st: _State) -> int:
        return st.distinct

    def should_stop(self, st: _State) -> bool:
        return self.stop_after is not None and st.depth > self.stop_after

    def expand_level(self, st: _State) -> None:
        if self.raise_at is not None and st.depth == self.raise_at[0]:
            raise self.raise_at[1]
        st.depth += 1
        st.distinct += 10
        st.frontier = 10 if st.depth < self.levels else 0
        self.clock += 1.0

    def save(self, st: _State, path: str) -> None:
        st.saved.append((path, st.depth))

    def finish(self, st: _State, reason: str | None, checkpoint_file: str | None) -> tuple:
        return st.depth, reason, checkpoint_file


def test_the_loop_runs_levels_until_the_frontier_is_empty_or_the_search_stops():
    assert run_levels(_Counting(SearchOptions()), _State()) == (5, None, None)
    assert run_levels(_Counting(SearchOptions(), stop_after=2), _State()) == (3, None, None)


def test_a_budget_between_levels_stops_the_loop_with_a_checkpoint_of_the_last_level():
    st = _State()
    depth, reason, checkpoint = run_levels(_Counting(SearchOptions(max_depth=3,
                                                                   checkpoint_path="c")), st)
    assert ((depth, checkpoint, st.saved) == (3, "c", [("c", 3)])
            and reason.startswith("depth bound 3"))
    st = _State()
    depth, reason, _ = run_levels(_Counting(SearchOptions(max_states=25)), st)
    # 31 states; no --checkpoint: none
    assert depth == 3 and reason.startswith("state budget 25") and st.saved == []


def test_a_budget_inside_a_level_is_undetermined_and_a_memory_budget_saves_even_without_checkpoint(
    tmp_path,
    monkeypatch):
    monkeypatch.chdir(tmp_path)
    st = _State()
    engine = _Counting(SearchOptions(),
                       raise_at=(2, BudgetExceeded("time budget of 1 s ran out at depth 2")))
    assert (run_levels(engine, st) == (2, "time budget of 1 s ran out at depth 2", None)
            and st.saved == [])
    st = _State()
    engine = _Counting(SearchOptions(),
                       raise_at=(2, BudgetExceeded("memory budget of 1 MB ran out at depth 2")))
    depth, _, checkpoint = run_levels(engine, st)
    assert (checkpoint == str(Path("kmc-checkpoints") / "two-phase.ckpt") and st.saved
            == [(checkpoint, 2)])


def test_ctrl_c_saves_the_last_whole_level_then_goes_on():
    st = _State()
    with pytest.raises(KeyboardInterrupt):
        run_levels(_Counting(SearchOptions(checkpoint_path="c"), raise_at=(3, KeyboardInterrupt())),
                   st)
    assert st.saved == [("c", 3)]


def test_periodic_checkpoints_and_an_engine_that_keeps_its_own():
    st = _State()
    run_levels(_Counting(SearchOptions(checkpoint_path="c", checkpoint_every=0.0)), st)
    assert st.saved == [("c", depth) for depth in range(1, 6)]
    st = _State()
    engine = _Counting(SearchOptions(checkpoint_path="c", checkpoint_every=0.0, max_depth=2),
                       saves=False)
    # Spark: its run directory is the checkpoint
    assert run_levels(engine, st)[2] is None and st.saved == []


def test_no_module_of_checker_runs_a_level_loop_of_its_own():
    """The budgets between levels are asked in one place: a module calling ``budget_reason`` itself
    would be a second level loop."""
    root = Path(__file__).resolve().parents[1] / "checker"
    callers = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", None)) == "budget_reason"):
                callers.add(path.relative_to(root).as_posix())
    assert callers == {"levels.py"}
