"""The ``torchlint`` command.

    torchlint check [OPTIONS] [PATH ...]  lint files and directories (``-`` reads standard input)
    torchlint [OPTIONS] [PATH ...]        the same, when the first PATH is not a subcommand's name
    torchlint rules                       the table of rules
    torchlint explain TL001               one rule's full documentation
    torchlint run SCRIPT [ARGS ...]       run a script under the runtime sanitizer

``check`` is explicit so that a file named like a subcommand can never turn a lint into
something else: the pre-commit hook runs ``torchlint check FILE...``, and a staged file
called ``run`` is linted, not executed.

Exit status: 0 no findings, 1 findings, 2 usage, configuration or path error (one line
on stderr, never a traceback). This module imports almost nothing at the top so that
``torchlint --version`` and a lint of one file start instantly; torch and libcst are
never imported on the lint path.
"""

from __future__ import annotations

import os
import sys

PROG = "torchlint"
# Kept here (and checked against reporters.REPORTERS by a test) so --version and --help
# need not import the engine.
FORMATS = ("text", "json", "github", "sarif")
SUBCOMMANDS = ("check", "rules", "explain", "run")


class UsageError(Exception):
    """Printed as one line, exit status 2."""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = argv[0] if argv and argv[0] in SUBCOMMANDS else None
    if command not in (None, "check") and os.path.lexists(command):
        # `torchlint rules` with a folder named rules/ here: the subcommand wins, say how to lint it.
        print(
            f"{PROG}: note: `{command}` is read as the subcommand; to lint the path {command!r}, "
            f"use `{PROG} check {command}`",
            file=sys.stderr,
        )
    if command == "run":
        # The sanitizer's own command; its exit status is the script's.
        return _run_sanitizer(argv[1:])
    try:
        if command == "rules":
            return _cmd_rules(argv[1:])
        if command == "explain":
            return _cmd_explain(argv[1:])
        return _cmd_lint(argv[1:] if command == "check" else argv)
    except UsageError as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `torchlint ... | head`: the reader left; stop quietly.
        # Point stdout at /dev/null so the interpreter's final flush does not complain either.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):  # pragma: no cover - stdout without a descriptor
            pass
        return 1
    except Exception as exc:  # a bug in torchlint itself: one line, not a traceback, unless asked
        if os.environ.get("TORCHLINT_DEBUG"):
            raise
        return _fail(f"internal error: {type(exc).__name__}: {exc} (set TORCHLINT_DEBUG=1 for the traceback)")


def _fail(message: str) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return 2


# ----- argument parsing -----------------------------------------------------------------------


def _parser():
    import argparse

    class Parser(argparse.ArgumentParser):
        def error(self, message):  # one line, no usage dump
            raise UsageError(message)

    from . import __version__

    parser = Parser(
        prog=f"{PROG} check",
        allow_abbrev=False,
        description="Find silent bugs in PyTorch training code. Other subcommands: "
        "`torchlint rules`, `torchlint explain CODE`, `torchlint run SCRIPT`. "
        "`torchlint PATH...` is short for `torchlint check PATH...`.",
        epilog="Exit status: 0 no findings, 1 findings, 2 usage, configuration or path error.",
    )
    parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="files or directories to lint (default: .); - reads stdin"
    )
    parser.add_argument(
        "--select",
        metavar="CODES",
        action="append",
        help="comma-separated rule codes, prefixes or names to enable, replacing the configured select"
        " (e.g. TL001,TL01,missing-zero-grad); may be repeated",
    )
    parser.add_argument(
        "--extend-select", metavar="CODES", action="append", help="rule codes, prefixes or names to enable in addition"
    )
    parser.add_argument(
        "--ignore", metavar="CODES", action="append", help="rule codes, prefixes or names to disable; may be repeated"
    )
    parser.add_argument("--format", choices=FORMATS, default="text", help="output format (default: text)")
    parser.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE instead of stdout")
    parser.add_argument("--exit-zero", action="store_true", help="exit with status 0 even when there are findings")
    parser.add_argument("--config", metavar="FILE", help="use this pyproject.toml or TOML file instead of searching")
    parser.add_argument("--no-color", action="store_true", help="never colour the output (also: NO_COLOR=1)")
    parser.add_argument(
        "--no-respect-gitignore",
        action="store_true",
        help="also lint files that .gitignore (or .git/info/exclude) names, when searching directories",
    )
    parser.add_argument(
        "--jobs",
        "-j",
        type=_jobs,
        default=1,
        metavar="N",
        help="lint files in N processes (0: one per CPU; default: 1)",
    )
    parser.add_argument(
        "--no-cache", action="store_true", help="lint every file again instead of reusing unchanged files' results"
    )
    parser.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="where to keep the result cache (default: cache-dir from the config, else .torchlint_cache"
        " next to it or in the current directory; also TORCHLINT_CACHE_DIR)",
    )
    parser.add_argument(
        "--max-file-size",
        type=_megabytes,
        default=1.0,
        metavar="MB",
        help="skip (with a warning) files larger than this; 0: no limit (default: 1)",
    )
    parser.add_argument(
        "--quiet", "-q", action="store_true", help="print only the findings: no source lines, no summary"
    )
    parser.add_argument("--statistics", action="store_true", help="print the number of findings per rule")
    parser.add_argument(
        "--fix",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="apply safe fixes to the files (stdin: print the fixed source); report what is left",
    )
    parser.add_argument(
        "--unsafe-fixes",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="with --fix or --diff, also apply fixes that may change behaviour beyond the bug",
    )
    parser.add_argument(
        "--diff", action="store_true", help="print a unified diff of what --fix would change; write nothing"
    )
    parser.add_argument("--show-fixes", action="store_true", help="list the fixes applied, per file and rule")
    parser.add_argument(
        "--stdin-filename", metavar="NAME", help="the file name to report (and match config with) for -"
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    return parser


def _jobs(text: str) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of processes, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 (one per CPU) or more, got {value}")
    return value


def _megabytes(text: str) -> float:
    import argparse

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a size in MB, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 (no limit) or more, got {text}")
    return value


def _parse(argv: list[str]):
    try:
        # Intermixed: `torchlint a.py -q b.py` names two files (plain parse_args stops at the option).
        return _parser().parse_intermixed_args(argv)
    except SystemExit as exc:  # --help and --version print, then exit 0
        raise _Exit(exc.code or 0) from None


class _Exit(Exception):
    def __init__(self, code: int):
        self.code = code


def use_color(stream, no_color: bool) -> bool:
    """Colour only for a terminal, unless --no-color or NO_COLOR (https://no-color.org) says no;
    FORCE_COLOR asks for it even when piped."""
    if no_color or os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


# ----- torchlint PATH... --------------------------------------------------------------------


def _cmd_lint(argv: list[str]) -> int:
    try:
        args = _parse(argv)
    except _Exit as done:
        return done.code

    from torchlint.engine.files import discover
    from torchlint.engine.gitignore import GitIgnore
    from torchlint.engine.reporters import REPORTERS, ReportOptions, write_fix_summary, write_statistics
    from torchlint.engine.runner import lint_stdin_bytes, lint_targets

    from .engine import config as config_mod

    config_mod.clear_cache()
    try:
        select = config_mod.parse_code_list(args.select, "--select") if args.select is not None else None
        ignore = config_mod.parse_code_list(args.ignore, "--ignore") if args.ignore is not None else None
        extend = config_mod.parse_code_list(args.extend_select, "--extend-select") if args.extend_select else ()
        resolver = config_mod.SettingsResolver(
            args.config, select, ignore, extend, False if args.no_respect_gitignore else None
        )
        gitignore = GitIgnore()

        paths = args.paths
        reading_stdin = paths == ["-"] or (not paths and args.stdin_filename is not None)
        if "-" in paths and not reading_stdin:
            raise UsageError("'-' (standard input) cannot be combined with other paths")
        if args.stdin_filename is not None and not reading_stdin:
            raise UsageError("--stdin-filename only applies when linting standard input ('-')")
        targets = None if reading_stdin else list(discover(paths or ["."], resolver.for_path, gitignore))
        cache = None if reading_stdin else _open_cache(args, resolver)
        stdin_settings = (
            resolver.for_path(args.stdin_filename or os.path.join(os.getcwd(), "stdin.py")) if reading_stdin else None
        )
    except config_mod.ConfigError as exc:
        raise UsageError(str(exc)) from None
    for warning in resolver.warnings + gitignore.problems:
        print(f"{PROG}: warning: {warning}", file=sys.stderr)
    excluded_count = _note_excluded([t for t in targets or () if t.excluded_by])
    targets = None if targets is None else [t for t in targets if not t.excluded_by]

    if args.diff and args.format != "text":
        raise UsageError("--diff prints a unified diff; it cannot be combined with --format")

    def fix_request(settings):
        return _fix_request(args, settings)

    fixing_stdin = targets is None and bool(fix_request(stdin_settings).write)
    # Open the output before the work, so a bad --output fails fast. Fixing standard input prints
    # the fixed source on stdout, so the report goes to stderr.
    stream, close = _open_output(args.output) if not fixing_stdin or args.output else (sys.stderr, False)
    collected = []

    def results_as_they_come():
        # The text and github reports print each file's findings as soon as it is linted.
        if targets is None:
            produced = _lint_stdin(args, stdin_settings, lint_stdin_bytes, fix_request)
        else:
            produced = lint_targets(
                targets, args.jobs, int(args.max_file_size * 1_000_000), lambda t: fix_request(t.settings), cache
            )
        for result in produced:
            for problem in result.problems:
                print(f"{PROG}: warning: {problem}", file=sys.stderr)
            collected.append(result)
            yield result

    if targets is not None and not targets and not excluded_count:
        print(f"{PROG}: warning: no Python files or notebooks found in {', '.join(paths or ['.'])}", file=sys.stderr)
    results = results_as_they_come()
    if args.diff:
        return _report_diffs(results, stream, close, args)
    here = fix_request(stdin_settings if targets is None else resolver.for_path(os.getcwd()))
    try:
        options = ReportOptions(
            color=args.output is None and use_color(stream, args.no_color),
            quiet=args.quiet,
            statistics=args.statistics and args.format == "text",
            unsafe_fixes=here.unsafe,
            fixing=here.write,
            show_fixes=args.show_fixes,
        )
        if args.format == "sarif":
            REPORTERS["sarif"](results, stream, options, rules=_all_rules())
        else:
            REPORTERS[args.format](results, stream, options)
        stream.flush()
    finally:
        if close:
            stream.close()
    if args.statistics and args.format != "text":
        write_statistics(collected, sys.stderr)
    if here.write and args.format != "text" and not args.quiet:
        write_fix_summary(collected, sys.stderr, args.show_fixes)
    for result in collected:
        if result.fixed_text is not None:  # --fix on standard input: the fixed source, for editors
            sys.stdout.write(result.fixed_text)
            sys.stdout.flush()
    for problem in cache.problems if cache is not None else ():
        print(f"{PROG}: warning: {problem}", file=sys.stderr)
    has_findings = any(r.findings for r in collected)
    return 1 if has_findings and not args.exit_zero else 0


def _fix_request(args, settings):
    """What to do about fixes for files under ``settings``: the command line wins over the config."""
    from torchlint.engine.runner import FixRequest

    fix = args.fix if args.fix is not None else bool(settings.fix)
    unsafe = args.unsafe_fixes if args.unsafe_fixes is not None else bool(settings.unsafe_fixes)
    if args.diff:
        return FixRequest(apply=True, diff=True, unsafe=unsafe)
    if fix:
        return FixRequest(apply=True, write=True, unsafe=unsafe)
    return FixRequest(edits=args.format in ("json", "sarif"), unsafe=unsafe)


def _report_diffs(results, stream, close, args) -> int:
    """--diff: the unified diffs on the output, how many fixes they hold on stderr; exit 1 when
    there is something to fix."""
    fixed = files = 0
    try:
        for result in results:
            if result.diff:
                stream.write(result.diff)
                fixed += sum(result.fixed.values())
                files += 1
        stream.flush()
    finally:
        if close:
            stream.close()
    if not args.quiet:
        if fixed:
            print(f"Would fix {_count(fixed, 'finding')} in {_count(files, 'file')}.", file=sys.stderr)
        else:
            print("No fixes to apply.", file=sys.stderr)
    return 1 if fixed and not args.exit_zero else 0


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _open_cache(args, resolver):
    """The result cache, unless --no-cache (or TORCHLINT_NO_CACHE) says not to use one."""
    if args.no_cache or os.environ.get("TORCHLINT_NO_CACHE"):
        return None
    from torchlint.engine.cache import DEFAULT_DIRECTORY, LintCache

    directory = args.cache_dir or os.environ.get("TORCHLINT_CACHE_DIR")
    if not directory:
        settings = resolver.for_path(os.path.join(os.getcwd(), "."))
        directory = settings.cache_dir or settings.root / DEFAULT_DIRECTORY
    return LintCache(directory)


def _note_excluded(targets: list) -> int:
    """One line about the files named on the command line that the user's excludes leave out
    (pre-commit names every staged file: one line, not one per file)."""
    if targets:
        first = targets[0]
        where = f"{first.excluded_by!r} in {first.settings.source or 'the configuration'}"
        if len(targets) == 1:
            text = f"{first.path} is excluded by the pattern {where}; not linted"
        else:
            text = f"{len(targets)} files named are excluded by exclude/extend-exclude (the first, {first.path}, by {where}); not linted"
        print(f"{PROG}: note: {text}", file=sys.stderr)
    return len(targets)


def _lint_stdin(args, settings, lint_stdin_bytes, fix_request) -> list:
    from torchlint.engine.files import excluded

    name = args.stdin_filename or "-"
    data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read().encode("utf-8")
    if args.stdin_filename and excluded(args.stdin_filename, settings, settings.user_excludes):
        if fix_request(settings).write:  # an editor waits for the source back, unchanged
            sys.stdout.flush()
            out = getattr(sys.stdout, "buffer", None)
            out.write(data) if out is not None else sys.stdout.write(data.decode("utf-8", "replace"))
        return []
    codes = settings.codes_for(args.stdin_filename) if args.stdin_filename else settings.enabled_codes()
    request = fix_request(settings)
    fixes = (request, request.options(settings)) if request.apply or request.edits else None
    return [lint_stdin_bytes(data, name, codes, fixes)]


def _open_output(path: str | None):
    if path is None:
        return sys.stdout, False
    try:
        return open(path, "w", encoding="utf-8"), True
    except OSError as exc:
        raise UsageError(f"--output: cannot write {path}: {exc.strerror or exc}") from None


def _all_rules() -> list:
    """SARIF describes every rule, so code scanning can show help for any result."""
    from torchlint.engine.rule import all_rules

    return list(all_rules().values())


# ----- torchlint rules / explain / run --------------------------------------------------------


def _cmd_rules(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print("usage: torchlint rules\n\nPrint every rule: code, name, severity and summary.")
        return 0
    if argv:
        raise UsageError(f"rules: unexpected argument {argv[0]!r} (usage: torchlint rules)")
    from torchlint.engine.rule import all_rules

    rules = list(all_rules().values())
    name_width = max(len("NAME"), *(len(r.name) for r in rules))
    lines = [f"{'CODE':<6} {'NAME':<{name_width}} {'SEVERITY':<8} SUMMARY"]
    lines += [f"{r.code:<6} {r.name:<{name_width}} {r.severity:<8} {r.summary}" for r in rules]
    print("\n".join(lines))
    return 0


def _cmd_explain(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print("usage: torchlint explain CODE\n\nPrint the full documentation of one rule (code or name).")
        return 0
    if len(argv) != 1:
        raise UsageError("explain: expected exactly one rule code or name, e.g. `torchlint explain TL001`")
    from torchlint.engine.rule import all_rules

    wanted = argv[0].strip()
    for rule in all_rules().values():
        if wanted.upper() == rule.code or wanted.lower() == rule.name:
            from torchlint.engine.finding import rule_url

            print(rule.docs(), end="")
            print(f"\nOnline: {rule_url(rule.code, rule.name)}")
            return 0
    raise UsageError(f"explain: unknown rule {wanted!r} (see `torchlint rules`)")


def _run_sanitizer(argv: list[str]) -> int:
    # Imported only here: the sanitizer needs torch, the linter must not.
    try:
        from .sanitizer.runner import main as run_main
    except ModuleNotFoundError as exc:
        if exc.name == "torch":
            return _fail("run: the sanitizer needs PyTorch; install it (pip install torch) and retry")
        if exc.name and exc.name.startswith("torchlint.sanitizer"):
            return _fail("run: the runtime sanitizer is not available in this installation")
        raise
    return run_main(argv)
