"""The documentation cannot drift from the code: the generated reference is rebuilt and compared,
the site builds strictly (a broken link or a page missing from the nav fails), every shell example
is run (its output compared where the page shows it) or marked as not run, and README stays a front
page."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from docs import examples, generate
from spec.errors import ExitCode
from tests.matrix_table import MATRIX_PAGE, documented_matrix

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
TEST_COMMAND = "python3 -m pip install -e '.[test]' && python3 -m pytest -n 3 --dist loadgroup"
FAST_TIER_COMMAND = 'python3 -m pytest -n 2 -m "not slow"'


# -- the generated reference -----------------------------------------------------------------------

def test_the_generated_pages_are_those_the_code_gives(tmp_path):
    written = generate.generate(tmp_path)
    assert "reference/cli.md" in written and "benchmarks.md" in written
    differ = [rel for rel in written if not (generate.DOCS / rel).is_file()
              or (generate.DOCS / rel).read_text(encoding="utf-8")
              != (tmp_path / rel).read_text(encoding="utf-8")]
    assert not differ, (
        "\n".join(f"docs/{rel} is out of date: run {generate.COMMAND}" for rel in differ))


def test_an_option_added_without_its_docs_fails(monkeypatch):
    """What the test above catches: an option the parsers gain makes the commands page out of
    date."""
    from kmc import cli

    build = cli.build_parser

    def with_new_option() -> argparse.ArgumentParser:
        parser = build()
        check = next(a for a in parser._actions
                     if isinstance(a, argparse._SubParsersAction)).choices["check"]
        check.add_argument("--brand-new-option", help="an option nobody documented")
        return parser

    assert generate.stale() == []
    monkeypatch.setattr(cli, "build_parser", with_new_option)
    assert generate.stale() == ["reference/cli.md"]
    assert "--brand-new-option" in generate.page_cli()


# a third generation (1 s of CPU); the fast test above names the command in its message too
@pytest.mark.slow
def test_the_check_command_names_the_regenerating_command(tmp_path, capsys):
    generate.generate(tmp_path)
    (tmp_path / "reference" / "exit-codes.md").write_text("edited by hand\n", encoding="utf-8")
    assert generate.main(["--check", "--out", str(tmp_path)]) == 1
    assert (capsys.readouterr().out == "docs/reference/exit-codes.md is out of date: run "
                                       f"{generate.COMMAND}\n")


# -- the site --------------------------------------------------------------------------------------

def _build(config: Path, site: Path) -> subprocess.CompletedProcess:
    # not --quiet: MkDocs then drops its warnings before --strict counts them, and a broken link
    # passes
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config),
                           "-d", str(site)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, cwd=config.parent)


@pytest.mark.slow  # a build (2 s of CPU, every line in mkdocs); the fast tier checks the pages
def test_the_site_builds_strictly(tmp_path):
    done = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").is_file()
    assert ("Performance notes" in (tmp_path / "site" / "archive" / "journal"
                                    / "index.html").read_text())


@pytest.mark.slow  # the test above builds the site as it is; this one with a link broken
def test_a_broken_link_fails_the_build(tmp_path):
    copy = tmp_path / "checkout"
    shutil.copytree(ROOT / "docs", copy / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    (copy / "bench").mkdir()
    shutil.copy(ROOT / "bench" / "NOTES.md", copy / "bench" / "NOTES.md")
    page = copy / "docs" / "how-to" / "tlc.md"
    page.write_text(page.read_text() + "\n[gone](no-such-page.md)\n")
    done = _build(copy / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0 and "no-such-page.md" in done.stderr


# -- the shell examples ----------------------------------------------------------------------------

def _pages_with(slow: bool) -> list[str]:
    """The pages with examples to run in a tier (a page whose examples cannot be read is kept: its
    test says why)."""
    chosen = []
    for page in examples.pages():
        try:
            found, _ = examples.read_page(page)
        except examples.PageError:
            found = None
        if found is None or any(e.run and e.slow == slow for e in found):
            chosen.append(str(page.relative_to(ROOT)))
    return chosen


def test_every_command_block_is_an_example_run_or_marked_not_run():
    marked = run = 0
    for page in examples.pages():
        found, _ = examples.read_page(page)  # raises PageError on an unmarked command block
        marked += sum(not e.run for e in found)
        run += sum(e.run for e in found)
        for e in found:
            assert e.run or e.reason, e.where
    assert run >= 15 and marked >= 1


def _run_page(page: str, tmp_path: Path, slow: bool) -> None:
    found, files = examples.read_page(ROOT / page)
    chosen = [e for e in found if e.run and (slow or not e.slow)]
    env = examples.prepare(tmp_path, files)
    failures = [why for e in chosen if (why := examples.run(e, tmp_path, env))]
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("page", _pages_with(slow=False))
def test_the_examples_of_a_page_do_what_it_shows(page, tmp_path):
    _run_page(page, tmp_path, slow=False)


@pytest.mark.slow
@pytest.mark.parametrize("page", _pages_with(slow=True))
def test_the_slow_examples_of_a_page_do_what_it_shows(page, tmp_path):
    _run_page(page, tmp_path, slow=True)


def test_a_failing_example_or_a_changed_output_fails(tmp_path):
    """The runner's own check: a command that exits otherwise than the page says, or prints
    otherwise, is named."""
    env = examples.prepare(tmp_path, [])
    bad = examples.Example("probe.md", 3, "kmc check two-phase --const RM=0", run=True)
    assert "exited 64, the page says 0" in examples.run(bad, tmp_path, env)
    assert examples.compare(("a", "...", "c"), "a\nb\nc\n") is None
    assert examples.compare(("a", "c"), "a\nb\nc\n") is not None  # a cut not marked
    assert examples.compare(("took 1.5 s", "..."), "took 7.25 s\nmore\n") is None  # seconds vary
    assert examples.compare(("4,851 states",), "4,852 states\n") is not None  # counts do not
    page_text = tmp_path / "page.md"
    page_text.write_text("text\n\n```\nkmc check two-phase\n```\n")
    with pytest.raises(examples.PageError, match="must be fenced as ```sh"):
        _read(page_text)


def _read(path: Path) -> None:
    """``examples.read_page`` on a file outside the checkout (the page's name is then its full
    path)."""
    original = examples.ROOT
    try:
        examples.ROOT = path.parent
        examples.read_page(path)
    finally:
        examples.ROOT = original


# -- README and the one matrix table ---------------------------------------------------------------

def test_readme_is_a_front_page():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    # what CI runs, and the developer's loop
    assert TEST_COMMAND in text and FAST_TIER_COMMAND in text
    # CI runs README's command
    assert (ROOT / ".ci" / "run").read_text().rstrip().endswith(TEST_COMMAND)
    for page in ("docs/tutorials/first-counterexample.md", "docs/reference/cli.md",
                 "docs/tutorials/matrix.md"):
        assert f"]({page})" in text


def test_the_matrix_table_is_in_one_place():
    table = documented_matrix()
    # every row kmc matrix runs has its line (a new release row without its cells fails here), and
    # no other
    from kmc.matrix.run import default_rows

    assert {protocol for protocol, _ in table} == {row.label for row in default_rows("kafka")}
    # the nine default invariants (a tenth on KRaft rows)
    assert len(table) >= 9 * len(default_rows("kafka"))
    holders = [p for p in examples.pages() if "every protocol against every invariant (model "
                                              "bounds)" in p.read_text()]
    assert holders == [MATRIX_PAGE]


def test_the_exit_codes_in_detail_are_the_codes_kmc_has():
    """The hand-written table of what each code covers names exactly the codes of
    ``spec.errors.ExitCode``."""
    text = (ROOT / "docs" / "how-to" / "checkpoints.md").read_text(encoding="utf-8")
    table = text[text.index("## Exit codes"):]
    codes = {int(line.split("|")[1]) for line in table.splitlines() if line.startswith("| ")
             and line[2].isdigit()}
    assert codes == {int(c) for c in ExitCode}
