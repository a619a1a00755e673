"""Output formats, tested by parsing what they print."""

import io
import json
import os
import re

import pytest
from cli_helpers import BUGGY, run_cli, write

from torchlint.engine.finding import Edit, Finding, Fix
from torchlint.engine.lint import FileResult
from torchlint.engine.reporters import ReportOptions, report_github, report_text, sarif_document
from torchlint.engine.rule import all_rules

JSON_KEYS = [
    "path",
    "line",
    "column",
    "end_line",
    "end_column",
    "code",
    "name",
    "severity",
    "message",
    "fix",
    "cell",
    "url",
]


@pytest.fixture(autouse=True)
def _in_tmp(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FORCE_COLOR", raising=False)


def finding(
    path="src/train.py",
    line=3,
    column=5,
    end_line=3,
    end_column=9,
    code="TL016",
    severity="error",
    message="bad thing; do this",
    fix=None,
):
    return Finding(path, line, column, end_line, end_column, code, "some-rule", severity, message, fix)


def render(reporter, results, **options):
    stream = io.StringIO()
    reporter(results, stream, ReportOptions(**options))
    return stream.getvalue()


# ----- json -------------------------------------------------------------------------------------


def test_json_is_an_array_of_findings_with_the_documented_keys(tmp_path):
    write(tmp_path / "train.py", BUGGY)
    write(tmp_path / "broken.py", "x = (\n")
    run = run_cli([".", "--format", "json", "--select", "TL016"])
    data = json.loads(run.out)
    assert [list(item) for item in data] == [JSON_KEYS, JSON_KEYS]
    broken, train = data
    assert broken == {
        "path": "broken.py",
        "line": 1,
        "column": 5,
        "end_line": 1,
        "end_column": 5,
        "code": "TL000",
        "name": "syntax-error",
        "severity": "error",
        "message": "cannot parse: '(' was never closed",
        "fix": None,
        "cell": None,
        "url": "https://github.com/torchlint/torchlint/blob/main/docs/rules/TL000-syntax-error.md",
    }
    assert (train["path"], train["line"], train["column"], train["end_line"], train["end_column"]) == (
        "train.py",
        5,
        9,
        5,
        24,
    )
    assert (train["code"], train["name"], train["severity"]) == ("TL016", "backward-under-no-grad", "error")


def test_json_of_a_clean_run_is_an_empty_array(tmp_path):
    write(tmp_path / "ok.py", "x = 1\n")
    run = run_cli(["ok.py", "--format", "json"])
    assert (run.code, json.loads(run.out)) == (0, [])


def test_json_fix_is_an_object_with_edits():
    fix = Fix("call zero_grad", (Edit(3, 5, 3, 5, "opt.zero_grad()\n"),))
    from torchlint.engine.reporters import report_json

    data = json.loads(render(report_json, [FileResult("a.py", [finding(fix=fix)])]))
    assert data[0]["fix"] == {
        "description": "call zero_grad",
        "applicability": "safe",
        "edits": [{"line": 3, "column": 5, "end_line": 3, "end_column": 5, "text": "opt.zero_grad()\n"}],
    }


# ----- github -----------------------------------------------------------------------------------

COMMAND = re.compile(r"^::(?P<kind>error|warning) (?P<props>[^:]*)::(?P<message>.*)$")


def parse_github(text):
    commands = []
    for line in text.splitlines():
        match = COMMAND.match(line)
        assert match, line
        props = dict(item.split("=", 1) for item in match.group("props").split(","))
        commands.append((match.group("kind"), props, match.group("message")))
    return commands


def test_github_workflow_commands(tmp_path):
    write(tmp_path / "train.py", BUGGY)
    run = run_cli(["train.py", "--format", "github", "--select", "TL016"])
    [(kind, props, message)] = parse_github(run.out)
    assert kind == "error"
    assert props == {
        "file": "train.py",
        "line": "5",
        "col": "9",
        "endLine": "5",
        "endColumn": "24",
        "title": "TL016 backward-under-no-grad",
    }
    assert message.startswith("`loss.backward()` runs under `torch.no_grad()`")


def test_github_warnings_and_escaping():
    results = [
        FileResult(
            "dir,1/a:b.py", [finding(path="dir,1/a:b.py", severity="warning", message="100% wrong\nsecond line")]
        )
    ]
    [(kind, props, message)] = parse_github(render(report_github, results))
    assert kind == "warning"
    assert props["file"] == "dir%2C1/a%3Ab.py"
    assert message == "100%25 wrong%0Asecond line"


# ----- sarif ------------------------------------------------------------------------------------


def test_sarif_structure(tmp_path):
    write(tmp_path / "src" / "train.py", BUGGY)
    run = run_cli(["src", "--format", "sarif", "--select", "TL016"])
    assert run.code == 1
    doc = json.loads(run.out)
    assert doc["version"] == "2.1.0"
    assert "sarif" in doc["$schema"]
    [sarif_run] = doc["runs"]
    driver = sarif_run["tool"]["driver"]
    assert driver["name"] == "torchlint"
    rules = driver["rules"]
    assert [r["id"] for r in rules] == list(all_rules())
    for descriptor in rules:
        rule = all_rules()[descriptor["id"]]
        assert descriptor["name"] == rule.name
        assert descriptor["shortDescription"]["text"] == rule.summary
        assert descriptor["help"]["text"] and descriptor["help"]["markdown"] == rule.docs()
        assert descriptor["defaultConfiguration"]["level"] in ("error", "warning")
        assert descriptor["helpUri"].endswith(f"/blob/main/docs/rules/{rule.code}-{rule.name}.md")
    [result] = sarif_run["results"]
    assert result["ruleId"] == "TL016"
    assert rules[result["ruleIndex"]]["id"] == "TL016"
    assert result["level"] == "error"
    assert result["message"]["text"].startswith("`loss.backward()`")
    [location] = result["locations"]
    physical = location["physicalLocation"]
    assert physical["artifactLocation"] == {"uri": "src/train.py", "uriBaseId": "%SRCROOT%"}
    assert physical["region"] == {"startLine": 5, "startColumn": 9, "endLine": 5, "endColumn": 24}
    assert sarif_run["originalUriBaseIds"]["%SRCROOT%"]["uri"].endswith("/")


def test_sarif_of_a_clean_run_has_rules_and_no_results(tmp_path):
    write(tmp_path / "ok.py", "x = 1\n")
    doc = json.loads(run_cli(["ok.py", "--format", "sarif"]).out)
    assert doc["runs"][0]["results"] == []
    assert len(doc["runs"][0]["tool"]["driver"]["rules"]) == len(all_rules())


def test_sarif_uri_escapes_and_absolute_paths_outside_the_working_directory(tmp_path):
    inside = finding(path="my dir/tráin.py")
    outside = finding(path="/elsewhere/x.py")
    doc = sarif_document([FileResult("x", [inside, outside])], list(all_rules().values()))
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"] for r in doc["runs"][0]["results"]]
    assert uris[0] == {"uri": "my%20dir/tr%C3%A1in.py", "uriBaseId": "%SRCROOT%"}
    assert uris[1] == {"uri": "file:///elsewhere/x.py"}


# ----- text -------------------------------------------------------------------------------------


def test_text_caret_under_a_tab_indented_line():
    line = "\tloss.backward()"
    f = finding(line=1, column=2, end_line=1, end_column=17)
    out = render(report_text, [FileResult("a.py", [f], {1: line})], files_checked=1)
    shown, caret = out.splitlines()[1:3]
    assert shown == "    1 |     loss.backward()"
    assert caret == "      |     " + "^" * 15


def test_text_caret_for_a_multiline_node_runs_to_the_end_of_its_first_line():
    f = finding(line=1, column=1, end_line=3, end_column=2)
    out = render(report_text, [FileResult("a.py", [f], {1: "opt.step(  "})], files_checked=1)
    assert out.splitlines()[2] == "      | " + "^" * 9


def test_text_summary_counts_errors_warnings_and_files():
    results = [
        FileResult("a.py", [finding(path="a.py"), finding(path="a.py", line=4, severity="warning")]),
        FileResult("b.py", [finding(path="b.py")]),
        FileResult("c.py", []),
    ]
    out = render(report_text, results, files_checked=3)
    assert out.splitlines()[-1] == "3 findings in 2 files (2 errors, 1 warning; 3 files checked)"


def test_text_colours_severity_with_colorama():
    import colorama

    out = render(
        report_text,
        [FileResult("a.py", [finding(severity="warning")], {3: "    opt.step()"})],
        color=True,
        files_checked=1,
    )
    assert colorama.Fore.YELLOW + colorama.Style.BRIGHT + "TL016" in out
    plain = render(report_text, [FileResult("a.py", [finding()], {3: "    opt.step()"})], files_checked=1)
    assert "\x1b[" not in plain


def test_paths_are_reported_as_given(tmp_path):
    write(tmp_path / "pkg" / "train.py", BUGGY)
    absolute = str(tmp_path / "pkg" / "train.py")
    run = run_cli([absolute, "-q", "--select", "TL016"])
    assert run.out.startswith(absolute + ":5:9:")
    run = run_cli([os.path.join(".", "pkg"), "-q", "--select", "TL016"])
    assert run.out.startswith(os.path.join(".", "pkg", "train.py") + ":5:9:")
