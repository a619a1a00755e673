"""pytest plugin: ``pytest --torchlint-sanitize`` runs each test under
``torchlint.sanitize()`` and fails the tests whose code has findings.

Registered through the ``pytest11`` entry point, so installing torchlint makes
the options available; nothing happens (and torch is not imported) unless the
option, the ``torchlint_sanitize`` ini setting or a ``torchlint`` marker asks
for it.

Options (command line, or ini settings with the same name in snake case):

``--torchlint-sanitize``           run every test's body under the sanitizer
``--torchlint-action fail|warn|raise``
                                   fail: a test with findings fails, listing them
                                   (default); warn: findings are SanitizerWarnings
                                   in pytest's warnings summary, tests pass;
                                   raise: SanitizerError at the first finding,
                                   inside the test
``--torchlint-select CODES``       only these codes (or prefixes: ``TS1``) count
``--torchlint-ignore CODES``       these codes never count
``--torchlint-option NAME=VALUE``  any keyword option of sanitize()
                                   (``anomaly=false``, ``stall_backwards=50``);
                                   repeatable

Markers: ``@pytest.mark.torchlint_skip(reason=...)`` opts a test out;
``@pytest.mark.torchlint(action=..., select=..., ignore=..., **sanitize_options)``
sets options for one test (and opts it in when the run does not).

The sanitizer watches the test function's body (the call phase), not its
fixtures.  Findings of a ``sanitize()`` block inside the test are merged into
the plugin's session as usual, so they count too: opt such tests out.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import pytest

from .findings import SanitizerWarning

_ACTIONS = ("fail", "warn", "raise")
_FINDINGS_KEY = pytest.StashKey[list]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("torchlint", "torchlint runtime sanitizer")
    group.addoption(
        "--torchlint-sanitize",
        action="store_true",
        default=None,
        help="run each test under torchlint.sanitize() and fail tests with findings",
    )
    group.addoption(
        "--torchlint-action",
        choices=_ACTIONS,
        default=None,
        help="fail (default): fail tests with findings; warn: report them as warnings; "
        "raise: stop the test at the first finding",
    )
    group.addoption(
        "--torchlint-select", metavar="CODES", default=None, help="comma-separated codes/prefixes that count"
    )
    group.addoption(
        "--torchlint-ignore", metavar="CODES", default=None, help="comma-separated codes/prefixes to ignore"
    )
    group.addoption(
        "--torchlint-option",
        metavar="NAME=VALUE",
        action="append",
        default=None,
        help="a keyword option of torchlint.sanitize(), e.g. anomaly=false (repeatable)",
    )
    parser.addini("torchlint_sanitize", type="bool", default=False, help="run each test under torchlint.sanitize()")
    parser.addini("torchlint_action", default="fail", help="fail, warn or raise")
    parser.addini("torchlint_select", default="", help="comma-separated codes/prefixes that count")
    parser.addini("torchlint_ignore", default="", help="comma-separated codes/prefixes to ignore")
    parser.addini("torchlint_options", type="linelist", default=[], help="NAME=VALUE options of sanitize()")


def _codes(text: str | list | tuple | None) -> tuple[str, ...]:
    if not text:
        return ()
    items = text.split(",") if isinstance(text, str) else list(text)
    return tuple(item.strip().upper() for item in items if item.strip())


def _value(text: str) -> Any:
    """``false`` -> False, ``3`` -> 3, ``1e3`` -> 1000.0, ``cpu,cuda`` -> ("cpu", "cuda"), else the string."""
    lowered = text.strip().lower()
    if lowered in ("true", "yes", "on"):
        return True
    if lowered in ("false", "no", "off"):
        return False
    if lowered in ("none", "null"):
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    if "," in text:
        return tuple(part.strip() for part in text.split(",") if part.strip())
    return text.strip()


def _options(pairs: list[str]) -> dict[str, Any]:
    options = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise pytest.UsageError(f"--torchlint-option expects NAME=VALUE, got {pair!r}")
        options[name.strip().replace("-", "_")] = _value(value)
    return options


@dataclass
class Settings:
    enabled: bool = False
    action: str = "fail"
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)

    def counts(self, code: str) -> bool:
        if self.select and not code.startswith(self.select):
            return False
        return not (self.ignore and code.startswith(self.ignore))

    def for_item(self, item: pytest.Item) -> Settings | None:
        """This test's settings, or None when it runs without the sanitizer."""
        if item.get_closest_marker("torchlint_skip") is not None:
            return None
        marker = item.get_closest_marker("torchlint")
        if marker is None:
            return self if self.enabled else None
        kwargs = dict(marker.kwargs)
        action = kwargs.pop("action", self.action)
        if action not in _ACTIONS:
            raise pytest.UsageError(f"@pytest.mark.torchlint(action={action!r}): expected one of {', '.join(_ACTIONS)}")
        return Settings(
            enabled=True,
            action=action,
            select=_codes(kwargs.pop("select", None)) or self.select,
            ignore=self.ignore + _codes(kwargs.pop("ignore", None)),
            options={**self.options, **kwargs},
        )


_SETTINGS_KEY = pytest.StashKey[Settings]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "torchlint(action=, select=, ignore=, **sanitize_options): run this test under torchlint.sanitize() "
        "with these options",
    )
    config.addinivalue_line("markers", "torchlint_skip(reason=None): never run this test under torchlint.sanitize()")
    option = config.getoption
    enabled = option("torchlint_sanitize")
    settings = Settings(
        enabled=bool(config.getini("torchlint_sanitize") if enabled is None else enabled),
        action=option("torchlint_action") or config.getini("torchlint_action") or "fail",
        select=_codes(option("torchlint_select") or config.getini("torchlint_select")),
        ignore=_codes(option("torchlint_ignore") or config.getini("torchlint_ignore")),
        options=_options([*config.getini("torchlint_options"), *(option("torchlint_option") or [])]),
    )
    if settings.action not in _ACTIONS:
        raise pytest.UsageError(f"torchlint_action = {settings.action!r}: expected one of {', '.join(_ACTIONS)}")
    if settings.enabled:
        _session(settings)  # bad options and a missing torch are usage errors, before any test runs
    config.stash[_SETTINGS_KEY] = settings
    config.stash[_FINDINGS_KEY] = []


def _session(settings: Settings):
    try:
        from .core import sanitize
    except ImportError as error:
        raise pytest.UsageError(f"--torchlint-sanitize needs PyTorch ({error})") from error
    # fail and warn record, then report the findings that count (select/ignore) at the end of the test.
    action = "raise" if settings.action == "raise" else "record"
    try:
        return sanitize(**{"summary": False, **settings.options, "action": action})
    except (TypeError, ValueError) as error:
        raise pytest.UsageError(f"torchlint sanitize options: {error}") from error


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    settings = item.config.stash[_SETTINGS_KEY].for_item(item)
    if settings is None:
        return (yield)
    session = _session(settings)
    report = None
    try:
        with session as report:
            result = yield
    except BaseException:
        # The test failed on its own (or raise stopped it): keep its error, show the findings beside it.
        findings = _record(item, settings, report)
        if findings:
            item.add_report_section("call", "torchlint", _describe(findings))
        raise
    # Counted after the session ended: some checks report at exit.
    findings = _record(item, settings, report)
    if findings and settings.action == "fail":
        pytest.fail(_describe(findings), pytrace=False)
    if settings.action == "warn":
        for finding in findings:
            warnings.warn_explicit(SanitizerWarning(finding), SanitizerWarning, finding.filename, finding.lineno)
    return result


def _record(item: pytest.Item, settings: Settings, report) -> list:
    findings = [f for f in (report or ()) if settings.counts(f.code)]
    if findings:
        item.config.stash[_FINDINGS_KEY].append((item.nodeid, findings))
        item.user_properties.append(("torchlint", [f.to_dict() for f in findings]))
    return findings


def _describe(findings) -> str:
    n = len(findings)
    lines = [f"torchlint.sanitize: {n} finding{'s' if n != 1 else ''} in this test"]
    lines.extend(f"  {finding.format()}" for finding in findings)
    return "\n".join(lines)


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    found = config.stash.get(_FINDINGS_KEY, [])
    if not found:
        return
    terminalreporter.section("torchlint.sanitize")
    for nodeid, findings in found:
        codes = ", ".join(sorted({f.code for f in findings}))
        terminalreporter.write_line(f"{nodeid}: {len(findings)} finding{'s' if len(findings) != 1 else ''} ({codes})")
