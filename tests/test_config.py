"""[tool.torchlint] configuration: discovery, keys, validation, and precedence with the command line."""

import textwrap

import pytest
from cli_helpers import BUGGY, CLEAN, LOOP, assert_one_line_error, run_cli, write

from torchlint.engine import config


@pytest.fixture(autouse=True)
def _in_tmp(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    config.clear_cache()


def pyproject(directory, body, name="pyproject.toml"):
    return write(directory / name, textwrap.dedent(body))


def codes(run):
    """(path, line, code) of each finding line of a --quiet text report."""
    found = []
    for line in run.out.splitlines():
        path, lineno, _col, rest = line.split(":", 3)
        found.append((path, int(lineno), rest.split()[0]))
    return found


# A file with one TL016 finding (line 5) and one TL000 file.
def project(tmp_path):
    write(tmp_path / "train.py", BUGGY)
    write(tmp_path / "broken.py", "def f(:\n")


def test_config_ignore_applies(tmp_path):
    project(tmp_path)
    pyproject(tmp_path, '[tool.torchlint]\nignore = ["TL016"]\n')
    assert codes(run_cli(["-q", "."])) == [("broken.py", 1, "TL000")]


def test_config_select_applies_and_syntax_errors_still_show(tmp_path):
    project(tmp_path)
    pyproject(tmp_path, '[tool.torchlint]\nselect = ["TL016"]\n')
    assert codes(run_cli(["-q", "."])) == [("broken.py", 1, "TL000"), ("train.py", 5, "TL016")]


def test_cli_select_overrides_config_select(tmp_path):
    project(tmp_path)
    pyproject(tmp_path, '[tool.torchlint]\nselect = ["TL001"]\n')
    assert ("train.py", 5, "TL016") not in codes(run_cli(["-q", "."]))
    assert ("train.py", 5, "TL016") in codes(run_cli(["-q", ".", "--select", "TL016"]))


def test_cli_ignore_overrides_config_ignore(tmp_path):
    project(tmp_path)
    pyproject(tmp_path, '[tool.torchlint]\nselect = ["TL016"]\nignore = ["TL016"]\n')
    assert codes(run_cli(["-q", "train.py"])) == []
    # --ignore replaces the configured ignore list, so TL016 comes back; the configured select stays.
    assert codes(run_cli(["-q", "train.py", "--ignore", "TL001"])) == [("train.py", 5, "TL016")]


def test_more_specific_entry_wins_between_select_and_ignore():
    assert "TL016" in config.resolve(("TL016",), ("TL0",))
    assert "TL016" not in config.resolve(("TL0",), ("TL016",))
    assert "TL016" not in config.resolve(("TL016",), ("TL016",))  # a tie goes to ignore
    assert "TL016" in config.resolve(("ALL",), ())
    assert "TL000" in config.resolve(("TL016",), ())  # unreadable files always reported...
    assert "TL000" not in config.resolve(None, ("TL000",))  # ...unless explicitly ignored


def test_per_file_ignores_by_glob_and_by_name(tmp_path):
    write(tmp_path / "tests" / "test_train.py", BUGGY)
    write(tmp_path / "scripts" / "conftest.py", BUGGY)
    write(tmp_path / "src" / "train.py", BUGGY)
    pyproject(
        tmp_path,
        """
        [tool.torchlint]
        select = ["TL016"]
        [tool.torchlint.per-file-ignores]
        "tests/*" = ["TL016"]
        "conftest.py" = ["TL0"]
        """,
    )
    assert codes(run_cli(["-q", "."])) == [("src/train.py", 5, "TL016")]


def test_per_file_ignores_still_apply_with_cli_select(tmp_path):
    write(tmp_path / "tests" / "t.py", BUGGY)
    pyproject(tmp_path, '[tool.torchlint.per-file-ignores]\n"tests/**" = ["TL016"]\n')
    assert codes(run_cli(["-q", ".", "--select", "TL016"])) == []


def test_nearest_pyproject_upwards_wins(tmp_path):
    write(tmp_path / "a" / "train.py", BUGGY)
    write(tmp_path / "b" / "train.py", BUGGY)
    pyproject(tmp_path, '[tool.torchlint]\nselect = ["TL016"]\n')
    pyproject(tmp_path / "b", '[tool.torchlint]\nignore = ["TL016"]\n')
    # A pyproject.toml without [tool.torchlint] does not stop the search.
    pyproject(tmp_path / "a", '[project]\nname = "a"\n')
    assert codes(run_cli(["-q", "."])) == [("a/train.py", 5, "TL016")]
    # The same when linting the file directly, from another directory.
    assert codes(run_cli(["-q", str(tmp_path / "b" / "train.py")])) == []


def test_explicit_config_file_replaces_discovery(tmp_path):
    project(tmp_path)
    pyproject(tmp_path, '[tool.torchlint]\nignore = ["TL016"]\n')
    pyproject(tmp_path / "cfg", 'select = ["TL016"]\n', name="torchlint.toml")
    assert ("train.py", 5, "TL016") in codes(run_cli(["-q", ".", "--config", "cfg/torchlint.toml"]))


def test_extend_exclude_skips_matching_files_and_directories(tmp_path):
    write(tmp_path / "generated" / "model_pb2.py", BUGGY)
    write(tmp_path / "legacy" / "old_train.py", BUGGY)
    write(tmp_path / "legacy" / "keep.py", BUGGY)
    write(tmp_path / "train.py", BUGGY)
    pyproject(tmp_path, '[tool.torchlint]\nselect = ["TL016"]\nextend-exclude = ["generated", "legacy/old_*.py"]\n')
    assert codes(run_cli(["-q", "."])) == [("legacy/keep.py", 5, "TL016"), ("train.py", 5, "TL016")]


def test_explicit_files_still_honour_configured_excludes(tmp_path):
    # pre-commit passes every changed file by name: excluded ones must stay excluded.
    write(tmp_path / "generated" / "x.py", BUGGY)
    pyproject(tmp_path, '[tool.torchlint]\nextend-exclude = ["generated"]\n')
    run = run_cli(["generated/x.py"])
    assert run.code == 0 and "TL016" not in run.out
    assert run.err == (
        f"torchlint: note: generated/x.py is excluded by the pattern 'generated' in {tmp_path / 'pyproject.toml'};"
        " not linted\n"
    )
    write(tmp_path / "generated" / "y.py", BUGGY)
    run = run_cli(["generated/x.py", "generated/y.py"])
    assert run.err.startswith("torchlint: note: 2 files named are excluded by exclude/extend-exclude (the first,")


def test_exclude_replaces_the_default_names(tmp_path):
    write(tmp_path / "build" / "train.py", BUGGY)
    write(tmp_path / "other" / "train.py", BUGGY)
    assert codes(run_cli(["-q", ".", "--select", "TL016"])) == [("other/train.py", 5, "TL016")]
    pyproject(tmp_path, '[tool.torchlint]\nexclude = ["other"]\n')
    config.clear_cache()
    assert codes(run_cli(["-q", ".", "--select", "TL016"])) == [("build/train.py", 5, "TL016")]


@pytest.mark.parametrize(
    "body, words",
    [
        ('[tool.torchlint]\nselct = ["TL016"]\n', ["selct", "did you mean 'select'", "pyproject.toml"]),
        ("[tool.torchlint]\nfrobnicate = 1\n", ["frobnicate", "known keys"]),
        ('[tool.torchlint]\nselect = ["TL999"]\n', ["select", "TL999"]),
        ('[tool.torchlint]\nignore = ["XX1"]\n', ["ignore", "XX1"]),
        ('[tool.torchlint]\nselect = "TL016"\n', ["select", "list of strings"]),
        ('[tool.torchlint]\nexclude = "build"\n', ["exclude", "list of strings"]),
        ('[tool.torchlint]\nper-file-ignores = ["x"]\n', ["per-file-ignores"]),
        ('[tool.torchlint.per-file-ignores]\n"tests/*" = ["TL9"]\n', ["per-file-ignores", "tests/*", "TL9"]),
        ("[tool.torchlint\nselect = 1\n", ["cannot parse config file", "pyproject.toml"]),
    ],
)
def test_config_errors_exit_2_with_one_line(tmp_path, body, words):
    write(tmp_path / "train.py", CLEAN)
    pyproject(tmp_path, body)
    assert_one_line_error(run_cli(["train.py"]), *words)


def test_config_pyproject_without_table_is_an_error_only_when_given_explicitly(tmp_path):
    write(tmp_path / "train.py", CLEAN)
    pyproject(tmp_path, '[project]\nname = "x"\n')
    assert run_cli(["train.py"]).code == 0
    assert_one_line_error(run_cli(["train.py", "--config", "pyproject.toml"]), "[tool.torchlint]")


def test_glob_match_semantics():
    assert config.glob_match("tests/unit/test_a.py", "tests/*")
    assert config.glob_match("a/b/conftest.py", "conftest.py")
    assert config.glob_match("scripts/run.py", "**/scripts/*.py")
    assert config.glob_match("pkg/scripts/run.py", "**/scripts/*.py")
    assert config.glob_match("build/lib/x.py", "build/")
    assert not config.glob_match("src/tests_helper.py", "tests")
    assert not config.glob_match("src/train.py", "tests/*")


def test_extend_select_in_the_config_adds_to_select_and_cli_select_replaces_both(tmp_path):
    project(tmp_path)
    write(tmp_path / "loop.py", LOOP)
    pyproject(tmp_path, '[tool.torchlint]\nselect = ["TL004"]\nextend-select = ["backward-under-no-grad"]\n')
    assert codes(run_cli(["-q", "."])) == [("broken.py", 1, "TL000"), ("loop.py", 4, "TL004"), ("train.py", 5, "TL016")]
    assert codes(run_cli(["-q", ".", "--select", "TL004"])) == [("broken.py", 1, "TL000"), ("loop.py", 4, "TL004")]
    assert codes(run_cli(["-q", ".", "--extend-select", "TL000"]))[1:] == [
        ("loop.py", 4, "TL004"),
        ("train.py", 5, "TL016"),
    ]


def test_rule_names_in_the_config(tmp_path):
    project(tmp_path)
    pyproject(
        tmp_path,
        '[tool.torchlint]\nignore = ["backward-under-no-grad"]\n[tool.torchlint.per-file-ignores]\n"broken.py" = ["syntax-error"]\n',
    )
    assert codes(run_cli(["-q", "."])) == []


def test_empty_select_warns_once_and_reports_only_unparsable_files(tmp_path):
    project(tmp_path)
    pyproject(tmp_path, "[tool.torchlint]\nselect = []\n")
    run = run_cli(["-q", "."])
    assert codes(run) == [("broken.py", 1, "TL000")]
    assert run.err.count("warning") == 1
    assert "select = [] enables no rule" in run.err and "pyproject.toml" in run.err
