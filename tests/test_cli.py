"""The kmc command line: JSON output, exit codes, and one-line errors for bad input."""

import json

from kmc.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_check_json_has_the_stable_keys(capsys, tmp_path):
    code, out, _ = run(capsys, "check", "two-phase", "--const", "RM=3", "--json", "--trace-dir",
                       str(tmp_path))
    data = json.loads(out)
    assert code == 0
    for key in ("model", "verdict", "distinct_states", "states_generated", "depth", "seconds",
                "violations"):
        assert key in data
    assert (data["verdict"], data["distinct_states"], data["states_generated"], data["depth"]) == (
        "holds", 288, 1146, 11)


def test_violation_exit_code_and_saved_trace(capsys, tmp_path):
    code, out, _ = run(capsys, "check", "two-phase", "--const", "commit_guard=off", "--json",
                       "--trace-dir", str(tmp_path))
    data = json.loads(out)
    assert code == 12 and data["verdict"] == "violated"
    (violation,) = data["violations"]
    assert violation["invariant"] == "TCConsistent" and violation["length"] == 3
    saved = json.loads(open(violation["trace_file"]).read())
    assert len(saved["steps"]) == 3


def test_undetermined_exit_code(capsys):
    code, out, _ = run(capsys, "check", "two-phase", "--const", "RM=5", "--max-states", "100",
                       "--json")
    assert code == 20 and json.loads(out)["verdict"] == "undetermined"


def one_line_error(err):
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_bad_inputs_give_one_line_and_exit_64(capsys):
    for argv in (
        ["check", "nonexistent"],
        ["check", "two-phase", "--bogus"],
        ["check", "two-phase", "--const", "RM=0"],
        ["check", "two-phase", "--const", "RM=three"],
        ["check", "two-phase", "--const", "Nope=1"],
        ["check", "two-phase", "--invariant", "Nope"],
        ["check", "two-phase", "--max-states", "-5"],
        ["check", "two-phase", "--protocol", "kip-101"],
        ["check", "two-phase", "--engine", "warp"],
    ):
        code, _, err = run(capsys, *argv)
        assert code == 64, argv
        assert one_line_error(err).startswith("kmc: error:")


def test_corrupt_checkpoint_gives_one_line_and_exit_65(capsys, tmp_path):
    bad = tmp_path / "bad.ckpt"
    bad.write_bytes(b"garbage")
    code, _, err = run(capsys, "check", "two-phase", "--resume", str(bad))
    assert code == 65
    assert "corrupt" in one_line_error(err) or "not a kmc checkpoint" in err


def test_simulation_finds_the_seeded_bug_deterministically(capsys, tmp_path):
    argv = ["simulate", "two-phase", "--const", "commit_guard=off", "--walks", "200", "--seed", "7",
            "--json", "--trace-dir", str(tmp_path)]
    code1, out1, _ = run(capsys, *argv)
    code2, out2, _ = run(capsys, *argv)
    first, second = json.loads(out1), json.loads(out2)
    assert code1 == code2 == 12
    assert first["violations"][0]["length"] == second["violations"][0]["length"] >= 3
    assert first["states_generated"] == second["states_generated"]


def test_simulation_without_violation_is_undetermined(capsys):
    code, out, _ = run(capsys, "simulate", "two-phase", "--walks", "20", "--json")
    data = json.loads(out)
    assert code == 20 and data["verdict"] == "undetermined" and data["walks"] == 20


def test_list_names_models_and_invariants(capsys):
    code, out, _ = run(capsys, "list", "--json")
    data = json.loads(out)
    names = {m["name"]: m for m in data["models"]}
    assert code == 0 and "two-phase" in names
    assert "TCConsistent" in names["two-phase"]["invariants"]
