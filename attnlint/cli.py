"""The command line, shaped like ruff's so its users know it.

    attnlint [check] [PATHS]...     lint (the default command)
    attnlint rules                  list the rules
    attnlint rule ATN103            print a rule's page
    attnlint verify FILE[::ENTRY]   prove every fix in FILE by running it against a reference kernel

Exit codes: 0 clean (or everything fixed), 1 findings remain (or --diff has a diff),
2 usage, configuration or internal error.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from attnlint import __version__
from attnlint.config import ConfigError, Settings, load_settings, with_overrides
from attnlint.diagnostics import ISSUES_URL
from attnlint.sourcetext import split_lines_keepends

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
# A CPU build, pinned (an unpinned `torch` pulls a multi-GB CUDA build).
TORCH_HINT = "pip install torch==2.13.0"
COMMANDS = ("check", "rule", "rules", "verify", "server")


def _codes(value: str) -> List[str]:
    """`ATN1,atn203` -> ["ATN1", "ATN203"]: codes are case-insensitive, as `attnlint rule` is."""
    return [c.strip().upper() for c in value.split(",") if c.strip()]


def _names(value: str) -> List[str]:
    return [c.strip() for c in value.split(",") if c.strip()]


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, not {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {number}")
    return number


def _pattern_codes(value: str) -> Dict[str, List[str]]:
    """ruff's `PATTERN:CODE` pairs, comma-separated: `tests/*:ATN101,ATN102,scripts/*:ATN2`
    (a code after a comma belongs to the pattern before it)."""
    table: Dict[str, List[str]] = {}
    pattern = None
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        if ":" in item:
            pattern, _, code = item.rpartition(":")
            pattern = pattern.strip()
            if not pattern:
                raise argparse.ArgumentTypeError(f"expected PATTERN:CODE, not {item!r}")
        elif pattern is None:
            raise argparse.ArgumentTypeError(f"expected PATTERN:CODE, not {item!r}")
        else:
            code = item
        table.setdefault(pattern, []).append(code.strip().upper())
    return table


class _MergeTables(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        table = dict(getattr(namespace, self.dest, None) or {})
        for pattern, codes in values.items():
            table[pattern] = table.get(pattern, []) + codes
        setattr(namespace, self.dest, table)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse exits 2 too; keep ruff's "error:" prefix
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"attnlint: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    from attnlint.reporters import FORMATS

    parser = _Parser(prog="attnlint", description="Static analysis and autofix for PyTorch attention code.")
    parser.add_argument("--version", action="version", version=f"attnlint {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    check = sub.add_parser("check", help="lint files (the default command)")
    check.add_argument("paths", nargs="*", default=None, help="files or directories (default: .); `-` reads stdin")
    fix = check.add_mutually_exclusive_group()
    fix.add_argument("--fix", action="store_true", default=None, help="apply safe fixes")
    fix.add_argument("--no-fix", dest="fix", action="store_false")
    unsafe = check.add_mutually_exclusive_group()
    unsafe.add_argument(
        "--unsafe-fixes",
        action="store_true",
        default=None,
        help="also apply (with --fix) or offer fixes that change numbers",
    )
    unsafe.add_argument("--no-unsafe-fixes", dest="unsafe_fixes", action="store_false")
    check.add_argument("--diff", action="store_true", help="print the fixes as a unified diff; write nothing")
    check.add_argument(
        "--verify", action="store_true", help="with --fix/--diff: apply only fixes proven by running them (needs torch)"
    )
    check.add_argument("--fix-only", action="store_true", help="apply fixes; do not report what remains")
    check.add_argument("--show-fixes", action="store_true", help="list the fixes that were applied")
    check.add_argument("--statistics", action="store_true", help="count findings by rule")
    check.add_argument(
        "--select", type=_codes, action="extend", help="rule codes or prefixes to enable (ALL for every rule)"
    )
    check.add_argument("--extend-select", type=_codes, action="extend", help="codes to enable on top of the selection")
    check.add_argument("--ignore", type=_codes, action="extend", help="codes or prefixes to disable")
    check.add_argument("--output-format", choices=FORMATS, default=os.environ.get("ATTNLINT_OUTPUT_FORMAT", "full"))
    check.add_argument("-o", "--output-file", help="write the report here instead of stdout")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings remain")
    check.add_argument(
        "--exit-non-zero-on-fix", action="store_true", help="exit 1 when any fix was applied, even if nothing remains"
    )
    check.add_argument(
        "--add-noqa",
        action="store_true",
        help="add `# noqa: CODE` to every finding; `--add-noqa=REASON` writes the reason after the codes",
    )
    # `--add-noqa=REASON` arrives here (see main): a bare `--add-noqa PATH` must stay a path.
    check.add_argument("--add-noqa-reason", help=argparse.SUPPRESS)
    check.add_argument(
        "--force-exclude",
        action="store_true",
        default=None,
        help="apply excludes to files named on the command line too",
    )
    check.add_argument("--config", type=Path, help="pyproject.toml to use instead of the closest one")
    check.add_argument("--stdin-filename", help="the path of the file read from stdin (for config and output)")
    check.add_argument("--jobs", "-j", type=_positive_int, default=None, help="worker processes (default: CPU count)")
    check.add_argument(
        "--no-cache",
        action="store_true",
        help="do not read or write the result cache (.attnlint_cache/ at the project root)",
    )
    # Reviewing a change (CI review bots): see attnlint/changes.py.
    check.add_argument(
        "--diff-base",
        metavar="REV",
        help="report only findings on lines added or changed since git revision REV "
        "(`auto`: the merge base with GITHUB_BASE_REF or the default branch)",
    )

    _add_ruff_options(check)

    rule = sub.add_parser("rule", help="print a rule's documentation")
    rule.add_argument("code", nargs="?", help="code or name, e.g. ATN103")
    rule.add_argument("--all", action="store_true", help="print every rule's page")
    rule.add_argument("--output-format", choices=("text", "json"), default="text")

    rules = sub.add_parser("rules", help="list the rules")
    rules.add_argument("--output-format", choices=("text", "json"), default="text")

    # attnlint verify: arguments only; the logic is attnlint.verify.command.
    verify = sub.add_parser("verify", help="prove each fix by running the original and the fixed code (needs torch)")
    verify.add_argument(
        "targets",
        nargs="+",
        metavar="[CODE] PATH[::ENTRY]",
        help="files or directories; FILE::Name verifies one class or function; a leading rule code selects that rule",
    )
    verify.add_argument("--entry", help="the class or function to run (default: every one holding a finding)")
    verify.add_argument("--device", action="append", help="cpu,cuda (default: cpu, and cuda when present)")
    verify.add_argument("--dtype", help="e.g. float32,bfloat16 (default: each device's own list)")
    verify.add_argument("--init", help="constructor arguments as JSON, e.g. '{\"d_model\": 64}'")
    verify.add_argument("--report", type=Path, help="write a self-contained HTML page with diffs and heat maps")
    verify.add_argument("--output-format", choices=("text", "json"), default="text")
    verify.add_argument("--timeout", type=float, help="seconds per finding (default 180)")
    verify.add_argument("--config", type=Path, help="pyproject.toml to use instead of the closest one")
    verify.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a recipe option, VALUE as JSON (e.g. --param heads=4 --param causal=true)",
    )
    sub.add_parser("server", help="run the language server (LSP over stdio; needs `pip install 'attnlint[lsp]'`)")
    return parser


def _split_add_noqa(arg: str) -> List[str]:
    return ["--add-noqa", "--add-noqa-reason", arg.split("=", 1)[1]]


def _add_ruff_options(check: argparse.ArgumentParser) -> None:
    """The rest of ruff's `check` options, with ruff's names and meaning."""
    loud = check.add_mutually_exclusive_group()
    loud.add_argument("-q", "--quiet", action="store_true", help="print findings, nothing else (no summary)")
    loud.add_argument("-s", "--silent", action="store_true", help="print nothing; the exit code still tells")
    loud.add_argument("-v", "--verbose", action="store_true", help="say what is happening on stderr")
    check.add_argument("--exclude", type=_names, action="extend", help="patterns to exclude (replaces the defaults)")
    check.add_argument("--extend-exclude", type=_names, action="extend", help="patterns to exclude on top of those")
    check.add_argument(
        "--per-file-ignores",
        type=_pattern_codes,
        action=_MergeTables,
        metavar="PATTERN:CODE",
        help="codes to ignore in files matching a glob, e.g. 'tests/*:ATN101' (replaces the config's)",
    )
    check.add_argument(
        "--extend-per-file-ignores",
        type=_pattern_codes,
        action=_MergeTables,
        metavar="PATTERN:CODE",
        help="like --per-file-ignores, on top of the config's",
    )
    check.add_argument("--fixable", type=_codes, action="extend", help="codes whose fixes may be applied")
    check.add_argument("--unfixable", type=_codes, action="extend", help="codes whose fixes are never applied")
    check.add_argument("--ignore-noqa", action="store_true", help="report findings that `# noqa` silences")
    check.add_argument("--isolated", action="store_true", help="ignore every configuration file")
    check.add_argument("--show-files", action="store_true", help="list the files that would be checked, and stop")
    check.add_argument("--show-settings", action="store_true", help="print the settings in effect, and stop")
    check.add_argument(
        "--cache-dir",
        type=Path,
        default=os.environ.get("ATTNLINT_CACHE_DIR") or None,
        help="where the result cache lives (default: .attnlint_cache/ at the project root; ATTNLINT_CACHE_DIR)",
    )
    colour = check.add_mutually_exclusive_group()
    colour.add_argument("--color", dest="color", action="store_true", default=None, help="colour the report")
    colour.add_argument("--no-color", dest="color", action="store_false", help="never colour (also: NO_COLOR=1)")
    check.add_argument("--watch", action="store_true", help="check again whenever a checked file changes")


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; every failure is an exit code, never a traceback with exit 1."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("attnlint: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug: say so, and exit 2 (1 would read as "findings remain")
        import traceback

        print(
            f"attnlint: error: internal error: {type(exc).__name__}: {exc}\n"
            f"This is a bug in attnlint; please report it at {ISSUES_URL} with this message:",
            file=sys.stderr,
        )
        traceback.print_exc(file=sys.stderr)
        return EXIT_ERROR


def _main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0] not in COMMANDS and argv[0] not in ("-h", "--help", "--version")):
        argv.insert(0, "check")
    argv = [a for arg in argv for a in (_split_add_noqa(arg) if arg.startswith("--add-noqa=") else [arg])]
    parser = build_parser()
    subcommands = _subcommands(parser)
    if argv[0] in subcommands:
        # The subcommand parses its own arguments, so a usage error shows its usage, not the top one.
        args = subcommands[argv[0]].parse_args(argv[1:])
        args.command = argv[0]
    else:
        args = parser.parse_args(argv)
    try:
        if args.command == "rules":
            return _list_rules(args)
        if args.command == "rule":
            return _show_rule(args, parser)
        if args.command == "verify":
            return _verify(args)
        if args.command == "server":
            return _server()
        return _check(args)
    except ConfigError as exc:
        print(f"attnlint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:  # `attnlint check | head`
        return EXIT_CLEAN


def _subcommands(parser: argparse.ArgumentParser) -> Dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


# ---------------------------------------------------------------------------------------------
def _settings(args) -> Settings:
    config = args.config
    if args.isolated and config is not None:
        raise ConfigError("--config and --isolated cannot be used together")
    if config is not None and not config.is_file():
        raise ConfigError(f"config file not found: {config}")
    settings = Settings(root=Path.cwd()) if args.isolated else load_settings(config)
    if args.select is not None:
        # ruff's rule: the last selection wins; a CLI --select starts from scratch.
        base_ignore, base_extend = [], []
    else:
        base_ignore, base_extend = settings.ignore, settings.extend_select
    return with_overrides(
        settings,
        select=args.select,
        ignore=base_ignore + (args.ignore or []),
        extend_select=base_extend + (args.extend_select or []),
        unsafe_fixes=args.unsafe_fixes,
        force_exclude=args.force_exclude,
        exclude=args.exclude,
        extend_exclude=settings.extend_exclude + (args.extend_exclude or []),
        per_file_ignores=_merged(
            args.per_file_ignores if args.per_file_ignores is not None else settings.per_file_ignores,
            args.extend_per_file_ignores or {},
        ),
        fixable=args.fixable,
        unfixable=args.unfixable,
        ignore_noqa=args.ignore_noqa or None,
        cache_dir=args.cache_dir,
    )


def _merged(base: Dict[str, List[str]], extra: Dict[str, List[str]]) -> Dict[str, List[str]]:
    table = {pattern: list(codes) for pattern, codes in base.items()}
    for pattern, codes in extra.items():
        table[pattern] = table.get(pattern, []) + list(codes)
    return table


def _check(args) -> int:
    if args.watch:
        return _watch(args)
    return _check_once(args)


def _check_once(args) -> int:
    # No LibCST and no rules here: a run answered from the cache never loads them (scheduling).
    from attnlint import scheduling
    from attnlint.terminal import Progress

    settings = _settings(args)
    _validate_codes(args)
    fixing = bool(args.fix or args.fix_only or args.diff)
    paths, stdin = _inputs(args)
    changes = _changes_since(args, ["-"] if stdin else paths)
    if stdin and not paths:
        return _check_stdin(args, settings, fixing)
    if stdin and fixing:
        raise ConfigError("`-` (standard input) cannot be fixed together with other paths; fix them in two runs")
    _prepare_output_file(args.output_file)  # before any work, so a bad -o changes nothing

    discovery = _discover(paths, settings)
    if changes is not None:
        discovery.files = changes.changed_files(discovery.files)
    cwd = Path.cwd()
    if args.show_files:
        for path in discovery.files:
            print(_display(path, cwd))
        return EXIT_CLEAN
    if args.show_settings:
        print(_settings_text(settings, discovery.files[0] if discovery.files else None))
        return EXIT_CLEAN
    jobs = [
        scheduling.Job(
            path=str(f),
            display=_display(f, cwd),
            fix=fixing,
            write=fixing and not args.diff,
            use_cache=not args.no_cache and not args.add_noqa and not args.ignore_noqa,
            fix_gate=_verify_gate() if args.verify and fixing else None,
        )
        for f in discovery.files
    ]
    _say(args, f"checking {len(jobs)} file{'s' if len(jobs) != 1 else ''}"
         f" with settings from {settings.config_path or 'the defaults'}")
    progress = Progress(len(jobs), enabled=not (args.quiet or args.silent))
    try:
        results = scheduling.process_files(jobs, settings, workers=1 if args.verify else args.jobs, progress=progress)
    finally:
        progress.close()
    diff_scope = changes.restrict(results, discovery.files) if changes is not None else None
    results = _with_path_problems(results, discovery.problems, cwd)
    if stdin:
        from attnlint import engine

        results.append(engine.check_source(_read_stdin(), args.stdin_filename or "-", settings))

    if args.add_noqa:
        return _add_noqa(results, {job.display: Path(job.path) for job in jobs}, args.add_noqa_reason)
    if args.diff:
        return _print_diff(results)
    _report(args, settings, results, fixing, diff_scope)
    return _exit_code(args, results)


def _inputs(args):
    """(paths, reads_stdin). `-` reads stdin, among other paths too; so does --stdin-filename alone
    (editors call it that way); ruff ignores the paths given with --stdin-filename, and says so."""
    paths = list(args.paths or [])
    stdin = "-" in paths or (args.stdin_filename is not None and not paths)
    if args.stdin_filename is not None and paths and "-" not in paths:
        _warn(args, f"ignoring {', '.join(paths)} in favour of standard input (--stdin-filename)")
        return [], True
    paths = [p for p in paths if p != "-"]
    if not stdin and not paths:
        paths = ["."]
    return paths, stdin


def _discover(paths, settings: Settings):
    from attnlint.discovery import discover

    return discover(paths, settings)


def _with_path_problems(results, problems, cwd: Path):
    """Paths that could not be checked become ATN002 results, in path order with the rest."""
    from attnlint.diagnostics import IO_ERROR_CODE, IO_ERROR_NAME, Diagnostic, FileResult, Position

    if not problems:
        return list(results)
    extra = []
    for problem in problems:
        display = _display(problem.path, cwd)
        message = f"cannot read {'the directory' if problem.directory else 'the file'}: {problem.reason}"
        start = Position(1, 0)
        diag = Diagnostic(IO_ERROR_CODE, IO_ERROR_NAME, message, display, start, start, noqa_row=1)
        extra.append(FileResult(path=display, diagnostics=[diag], error=message))
    return sorted(list(results) + extra, key=lambda r: r.path)


def _report(args, settings: Settings, results, fixing: bool, diff_scope=None) -> None:
    from attnlint.reporters import render

    try:
        report = (
            render(
                args.output_format,
                results,
                unsafe_fixes=settings.unsafe_fixes,
                show_fixes=args.show_fixes,
                statistics=args.statistics,
                fix_mode=fixing,
                diff_scope=diff_scope,
            )
            if not args.fix_only
            else _fix_only_summary(results)
        )
    except ValueError as exc:  # e.g. --statistics with a CI format
        raise ConfigError(str(exc)) from exc
    human = args.output_format in ("full", "concise") or args.fix_only
    if human and args.quiet:
        report = _without_summary(report, results, settings, fixing)
    if args.silent:
        report = ""
    if human and report:
        from attnlint.terminal import colourise, wants_colour

        stream = sys.stdout if not args.output_file else None
        if wants_colour(args.color, stream) if stream is not None else args.color:
            report = colourise(report)
    _emit(report, args.output_file)
    _print_warnings(results)
    for result in results:
        for warning in result.fix_warnings:
            _warn(args, f"{result.path}: {warning}")
        if result.error and not result.diagnostics:
            print(f"attnlint: error: {result.path}: {result.error}", file=sys.stderr)


def _without_summary(report: str, results, settings: Settings, fixing: bool) -> str:
    """ruff's --quiet: the findings, without the summary lines that follow them."""
    from attnlint.reporters.text import summary_lines

    if report.startswith(("Fixed ", "No errors fixed.")):
        return ""
    summary = "\n".join(summary_lines(results, unsafe_fixes=settings.unsafe_fixes, fix_mode=fixing)) + "\n"
    return report[: -len(summary)] if report.endswith(summary) else report


def _validate_codes(args) -> None:
    tables = [args.per_file_ignores or {}, args.extend_per_file_ignores or {}]
    lists = [args.select, args.ignore, args.extend_select, args.fixable, args.unfixable]
    lists += [codes for table in tables for codes in table.values()]
    selectors = [sel for codes in lists for sel in codes or []]
    if not selectors:  # the rules are imported only to check codes given here (warm runs skip them)
        return
    from attnlint.config import _expand
    from attnlint.rules import registry

    all_codes = [r.code for r in registry.all_rules()]
    for sel in selectors:
        _expand(sel, all_codes)  # unknown codes are a usage error, not a silent no-op


def _say(args, message: str) -> None:
    if getattr(args, "verbose", False):
        print(f"attnlint: {message}", file=sys.stderr)


def _warn(args, message: str) -> None:
    if not getattr(args, "silent", False):
        print(f"attnlint: warning: {message}", file=sys.stderr)


def _settings_text(settings: Settings, example: Optional[Path]) -> str:
    """--show-settings: every setting in effect, and the rules enabled for the first file."""
    import dataclasses

    from attnlint.rules import registry

    lines = [f"Settings from: {settings.config_path or '(defaults: no [tool.attnlint] table found)'}"]
    for item in dataclasses.fields(settings):
        lines.append(f"{item.name.replace('_', '-')} = {getattr(settings, item.name)!r}")
    codes = [r.code for r in registry.all_rules()]
    if example is not None:
        enabled = sorted(set(settings.selected_codes(codes)) - settings.ignored_for_path(str(example), codes))
        lines.append(f"enabled for {_display(example, Path.cwd())}: {', '.join(enabled) or 'none'}")
    else:
        lines.append(f"enabled: {', '.join(settings.selected_codes(codes)) or 'none'}")
    return "\n".join(lines)


def _watch(args) -> int:
    """Check, then check again whenever a file under the paths changes (Ctrl-C stops)."""

    def snapshot():
        paths, _ = _inputs(args)
        state = {}
        for f in _discover(paths, _settings(args)).files:
            try:
                info = f.stat()
                state[str(f)] = (info.st_mtime_ns, info.st_size)
            except OSError:
                state[str(f)] = None
        return state

    try:
        while True:
            print("Watching for file changes.", file=sys.stderr)
            _check_once(args)
            _wait_for_change(snapshot)
            print("File change detected...", file=sys.stderr)
    except KeyboardInterrupt:
        return EXIT_CLEAN


def _wait_for_change(snapshot, interval: float = 0.5) -> None:
    import time

    before = snapshot()
    while snapshot() == before:
        time.sleep(interval)


def _print_warnings(results) -> None:
    """Malformed suppressions, in ruff's words: `Invalid `# noqa` directive on path:line: ...`."""
    for result in results:
        for warning in result.warnings:
            where = f"{result.path}:{warning.line}"
            if result.notebook is not None:
                cell = result.notebook.cell_of(warning.line)
                where = f"{result.path}:cell {cell[0]}:{cell[1]}" if cell else where
            print(f"attnlint: warning: {warning.render(where)}", file=sys.stderr)


def _changes_since(args, paths):
    """The change `--diff-base` reviews (None without it); fixing whole files would reach past it."""
    from attnlint.changes import changes_since

    if not args.diff_base:
        if args.output_format == "github-review":
            raise ConfigError(
                "--output-format github-review needs --diff-base (GitHub accepts review comments only on "
                "lines in the pull request's diff)"
            )
        return None
    if args.fix or args.fix_only or args.diff or args.add_noqa:
        raise ConfigError("--diff-base reports findings only; it cannot be combined with --fix, --diff or --add-noqa")
    if paths == ["-"]:
        raise ConfigError("--diff-base needs files in a git repository, not stdin")
    # The repository is the one holding the first path checked (the working directory's, for `.`).
    anchor = Path(paths[0]).resolve()
    if not anchor.is_dir():
        anchor = anchor.parent if anchor.parent.is_dir() else Path.cwd()
    return changes_since(args.diff_base, anchor)


def _exit_code(args, results) -> int:
    if any(r.internal_error for r in results):
        return EXIT_ERROR
    if args.exit_zero:
        return EXIT_CLEAN
    remaining = sum(len(r.diagnostics) for r in results)
    errors = any(r.error for r in results)
    fixed = sum(sum(r.fixed.values()) for r in results)
    if args.exit_non_zero_on_fix and fixed:
        return EXIT_FINDINGS
    if args.fix_only:
        return EXIT_FINDINGS if errors else EXIT_CLEAN
    return EXIT_FINDINGS if remaining or errors else EXIT_CLEAN


def _fix_only_summary(results) -> str:
    fixed = sum(sum(r.fixed.values()) for r in results)
    return f"Fixed {fixed} error{'s' if fixed != 1 else ''}.\n" if fixed else "No errors fixed.\n"


def _display(path: Path, cwd: Path) -> str:
    """The path as the user named it (a symlink stays the link), relative to cwd when below it."""
    absolute = os.path.abspath(path)  # no symlink resolution, unlike Path.resolve()
    try:
        relative = os.path.relpath(absolute, os.path.abspath(cwd))
    except ValueError:  # another drive on Windows
        return Path(path).as_posix()
    if relative == ".." or relative.startswith(".." + os.sep):
        return Path(path).as_posix()
    return Path(relative).as_posix()


def _prepare_output_file(output_file: Optional[str]) -> None:
    """-o FILE: create its directory (as ruff does) and make sure it can be written, up front."""
    if not output_file:
        return
    target = Path(output_file)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a file where a directory should be
        raise ConfigError(f"cannot write the report to {output_file}: {target.parent} is not a directory") from None
    except OSError as exc:
        raise ConfigError(f"cannot write the report to {output_file}: {exc.strerror or exc}") from exc
    try:
        with open(target, "a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise ConfigError(f"cannot write the report to {output_file}: {exc.strerror or exc}") from exc


def _emit(text: str, output_file: Optional[str]) -> None:
    if output_file:
        try:
            Path(output_file).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot write the report to {output_file}: {exc.strerror or exc}") from exc
    else:
        sys.stdout.write(text)
        sys.stdout.flush()


def _read_stdin() -> str:
    """Standard input as Python reads a file: bytes decoded by their coding cookie or BOM."""
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:  # a text stream (tests, embedding)
        return sys.stdin.read()
    from attnlint.engine import read_source

    raw = buffer.read()
    try:
        return read_source(Path("-"), raw).text
    except ValueError as exc:  # SourceDecodeError, LookupError
        raise ConfigError(f"cannot decode standard input: {exc}") from exc


def _check_stdin(args, settings: Settings, fixing: bool) -> int:
    from attnlint import engine
    from attnlint.reporters import render

    source = _read_stdin()
    display = args.stdin_filename or "-"
    if args.stdin_filename and settings.force_exclude and settings.is_excluded(Path(args.stdin_filename)):
        # An excluded path is left alone, as on disk: echo the text when fixing, report nothing.
        if fixing and not args.diff:
            sys.stdout.write(source)
        return EXIT_CLEAN
    from attnlint.notebook import check_notebook, is_notebook_path

    if is_notebook_path(display):  # the notebook's JSON on stdin; with --fix, the fixed JSON on stdout
        result = check_notebook(source, display, settings, fix=fixing)
        if fixing and not args.diff:
            sys.stdout.write(result.fixed_source if result.fixed_source is not None else source)
            if not args.fix_only and result.diagnostics:
                sys.stderr.write(render("concise", [result], unsafe_fixes=settings.unsafe_fixes, fix_mode=True))
            return _exit_code(args, [result])
        if args.diff:
            return _print_diff([result])
        _print_warnings([result])
        _emit(render(args.output_format, [result], unsafe_fixes=settings.unsafe_fixes), args.output_file)
        return _exit_code(args, [result])
    if fixing:
        result = engine.fix_source(source, display, settings)
        if args.diff:
            return _print_diff([result])
        # The fixed source goes to stdout (editors replace the buffer with it); findings to stderr.
        sys.stdout.write(result.fixed_source if result.fixed_source is not None else source)
        if not args.fix_only and result.diagnostics and not args.silent:
            sys.stderr.write(render("concise", [result], unsafe_fixes=settings.unsafe_fixes, fix_mode=True))
    else:
        _prepare_output_file(args.output_file)
        result = engine.check_source(source, display, settings)
        _report(args, settings, [result], fixing)
    return _exit_code(args, [result])


def _print_diff(results) -> int:
    changed = 0
    for result in results:
        before, after = result.original_source, result.fixed_source
        if before is None or after is None or before == after:
            continue
        changed += sum(result.fixed.values())
        if result.notebook is not None:  # a notebook: the cells' code, not the JSON (ruff's form)
            from attnlint.notebook import changed_cells

            pieces = [(f"{result.path}:cell {n}", old, new) for n, old, new in changed_cells(before, after)]
        else:
            pieces = [(result.path, before, after)]
        for name, old, new in pieces:
            old_lines, new_lines = split_lines_keepends(old), split_lines_keepends(new)
            # A cell's last line has no newline; keep the diff's lines whole.
            for lines in (old_lines, new_lines):
                if lines and not lines[-1].endswith(("\n", "\r")):
                    lines[-1] += "\n"
            sys.stdout.writelines(difflib.unified_diff(old_lines, new_lines, fromfile=f"a/{name}", tofile=f"b/{name}"))
    if changed:
        print(f"\nWould fix {changed} error{'s' if changed != 1 else ''}.", file=sys.stderr)
    failed = [r for r in results if r.error]
    for result in failed:  # a file that could not be read or parsed has no diff, but it is not fine
        print(f"attnlint: error: {result.path}: {result.error}", file=sys.stderr)
    if any(r.internal_error for r in results):
        return EXIT_ERROR
    return EXIT_FINDINGS if changed or failed else EXIT_CLEAN


def _add_noqa(results, by_display, reason: Optional[str] = None) -> int:
    from attnlint.engine import read_source, write_atomically

    added = 0
    failed = False
    for result in results:
        if result.path not in by_display:  # a path that could not be read: nothing to add to
            continue
        rows = {}
        for diag in result.diagnostics:
            if diag.code in ("ATN001", "ATN002", "ATN100"):  # a noqa for an unused noqa helps nobody
                continue
            rows.setdefault(diag.noqa_row, []).append(diag.code)
        if not rows:
            continue
        path = by_display[result.path]
        decoded = read_source(path)
        new_text = _with_noqa(path, decoded.text, rows, reason)
        if new_text != decoded.text:
            try:
                write_atomically(path, decoded, new_text)
            except OSError as exc:
                print(f"attnlint: error: {result.path}: cannot add noqa: {exc.strerror or exc}", file=sys.stderr)
                failed = True
                continue
            added += len(rows)
    print(f"Added {added} noqa directive{'s' if added != 1 else ''}.")
    return EXIT_FINDINGS if failed else EXIT_CLEAN


def _with_noqa(path: Path, text: str, rows, reason: Optional[str]) -> str:
    from attnlint.noqa import add_noqa
    from attnlint.notebook import NotebookError, is_notebook_path, rewrite_program

    if not is_notebook_path(str(path)):
        return add_noqa(text, rows, reason)
    try:
        return rewrite_program(text, lambda program: add_noqa(program, rows, reason))
    except NotebookError as exc:
        print(f"attnlint: warning: {path}: {exc}", file=sys.stderr)
        return text


# ---------------------------------------------------------------------------------------------
def _list_rules(args) -> int:
    from attnlint.rules import registry

    rules = registry.all_rules()
    if args.output_format == "json":
        print(json.dumps([_rule_record(r) for r in rules], indent=2))
        return EXIT_CLEAN
    width = max(len(r.name) for r in rules)
    print(f"{'code':<7} {'name':<{width}}  {'fix':<18}  summary")
    for r in rules:
        fix = f"{r.fix_availability.value} ({r.fix_applicability.value})" if r.fix_applicability else "none"
        print(f"{r.code:<7} {r.name:<{width}}  {fix:<18}  {r.summary}")
    return EXIT_CLEAN


def _rule_record(rule) -> dict:
    return {
        "code": rule.code,
        "name": rule.name,
        "summary": rule.summary,
        "fix": rule.fix_sentence(),
        "fix_availability": rule.fix_availability.value,
        "fix_applicability": rule.fix_applicability.value if rule.fix_applicability else None,
        "options": dict(rule.default_options),
        "url": rule.url(),
        "explanation": rule.page(),
    }


def _show_rule(args, parser) -> int:
    from attnlint.docs import render_rule_page
    from attnlint.rules import registry

    if args.all:
        rules = registry.all_rules()
    elif args.code:
        from attnlint.filecodes import lookup as file_code

        page = file_code(args.code)
        if page is not None:  # ATN001-ATN003: about files, not rules
            print(json.dumps(page.record(), indent=2) if args.output_format == "json" else page.page())
            return EXIT_CLEAN
        try:
            rules = [registry.lookup(args.code)]
        except KeyError:
            print(f"attnlint: error: unknown rule `{args.code}`; see `attnlint rules`", file=sys.stderr)
            return EXIT_ERROR
    else:
        _subcommands(parser)["rule"].error("a rule code is required, e.g. `attnlint rule ATN101` (or --all)")
    if args.output_format == "json":
        records = [_rule_record(r) for r in rules]
        print(json.dumps(records if args.all else records[0], indent=2))
    else:
        print("\n\n".join(render_rule_page(r) for r in rules))
    return EXIT_CLEAN


def _server() -> int:
    try:
        from attnlint.server import main as serve
    except ImportError as exc:
        print(f"attnlint: error: the language server needs pygls ({exc}): pip install 'attnlint[lsp]'", file=sys.stderr)
        return EXIT_ERROR
    return serve()


def _verify_gate():
    from attnlint.verify.gate import verified_fixes

    return verified_fixes


def _verify(args) -> int:
    from attnlint.verify import command

    try:
        return command.run(
            args.targets,
            entry=args.entry,
            devices=",".join(args.device) if args.device else None,
            dtypes=args.dtype,
            init=args.init,
            params=command.parse_params(args.param),
            report=args.report,
            output_format=args.output_format,
            timeout_s=args.timeout,
            config=args.config,
        )
    except FileNotFoundError as exc:
        print(f"attnlint: error: no such file or directory: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except ImportError:
        print(f"attnlint: error: verification needs torch: {TORCH_HINT}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
