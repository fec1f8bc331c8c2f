"""The command line, shaped like ruff's so its users know it.

    attnlint [check] [PATHS]...     lint (the default command)
    attnlint rules                  list the rules
    attnlint rule ATN103            print a rule's page
    attnlint verify ATN103 FILE     run a rule's fix and prove it against a reference kernel

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
from typing import List, Optional, Sequence

from attnlint import __version__
from attnlint.config import ConfigError, Settings, load_settings, with_overrides
from attnlint.sourcetext import split_lines_keepends

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
COMMANDS = ("check", "rule", "rules", "verify")


def _codes(value: str) -> List[str]:
    return [c.strip() for c in value.split(",") if c.strip()]


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
    check.add_argument("--add-noqa", action="store_true", help="add `# noqa: CODE` to every finding")
    check.add_argument(
        "--force-exclude",
        action="store_true",
        default=None,
        help="apply excludes to files named on the command line too",
    )
    check.add_argument("--config", type=Path, help="pyproject.toml to use instead of the closest one")
    check.add_argument("--stdin-filename", help="the path of the file read from stdin (for config and output)")
    check.add_argument("--jobs", "-j", type=int, default=None, help="worker processes (default: CPU count)")
    check.add_argument(
        "--no-cache",
        action="store_true",
        help="do not read or write the result cache (.attnlint_cache/ at the project root)",
    )

    rule = sub.add_parser("rule", help="print a rule's documentation")
    rule.add_argument("code", nargs="?", help="code or name, e.g. ATN103")
    rule.add_argument("--all", action="store_true", help="print every rule's page")
    rule.add_argument("--output-format", choices=("text", "json"), default="text")

    rules = sub.add_parser("rules", help="list the rules")
    rules.add_argument("--output-format", choices=("text", "json"), default="text")

    verify = sub.add_parser("verify", help="apply a rule's fix to a file and prove it by running it (needs torch)")
    verify.add_argument("code", help="rule code, e.g. ATN103")
    verify.add_argument("file", type=Path, help="a file with the buggy code")
    verify.add_argument("--entry", required=True, help="the class or function to run, e.g. SelfAttentionV1")
    verify.add_argument("--device", action="append", help="cpu or cuda (default: cpu, and cuda when present)")
    verify.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a recipe option, VALUE as JSON (e.g. --param heads=4 --param causal=true)",
    )
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0] not in COMMANDS and argv[0] not in ("-h", "--help", "--version")):
        argv.insert(0, "check")
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "rules":
            return _list_rules(args)
        if args.command == "rule":
            return _show_rule(args, parser)
        if args.command == "verify":
            return _verify(args)
        return _check(args)
    except ConfigError as exc:
        print(f"attnlint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:  # `attnlint check | head`
        return EXIT_CLEAN


# ---------------------------------------------------------------------------------------------
def _settings(args) -> Settings:
    config = args.config
    if config is not None and not config.is_file():
        raise ConfigError(f"config file not found: {config}")
    settings = load_settings(config)
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
    )


def _check(args) -> int:
    # No LibCST and no rules here: a run answered from the cache never loads them (scheduling).
    from attnlint import scheduling
    from attnlint.config import _expand
    from attnlint.discovery import collect_files
    from attnlint.reporters import render

    settings = _settings(args)
    cli_selectors = [*(args.select or []), *(args.ignore or []), *(args.extend_select or [])]
    if cli_selectors:
        from attnlint.rules import registry

        all_codes = [r.code for r in registry.all_rules()]
        for sel in cli_selectors:
            _expand(sel, all_codes)  # unknown codes are a usage error, not a silent no-op
    fixing = bool(args.fix or args.fix_only or args.diff)
    paths = args.paths or ["."]

    if paths == ["-"]:
        return _check_stdin(args, settings, fixing)

    try:
        files = collect_files(paths, settings)
    except FileNotFoundError as exc:
        print(f"attnlint: error: no such file or directory: {exc}", file=sys.stderr)
        return EXIT_ERROR
    cwd = Path.cwd()
    jobs = [
        scheduling.Job(
            path=str(f),
            display=_display(f, cwd),
            fix=fixing,
            write=fixing and not args.diff,
            use_cache=not args.no_cache and not args.add_noqa,
        )
        for f in files
    ]
    results = scheduling.process_files(jobs, settings, workers=args.jobs)

    if args.add_noqa:
        return _add_noqa(results, files)
    if args.diff:
        return _print_diff(results)

    try:
        report = (
            render(
                args.output_format,
                results,
                unsafe_fixes=settings.unsafe_fixes,
                show_fixes=args.show_fixes,
                statistics=args.statistics,
                fix_mode=fixing,
            )
            if not args.fix_only
            else _fix_only_summary(results)
        )
    except ValueError as exc:  # e.g. --statistics with a CI format
        raise ConfigError(str(exc)) from exc
    _emit(report, args.output_file)
    for result in results:
        for warning in result.fix_warnings:
            print(f"attnlint: warning: {result.path}: {warning}", file=sys.stderr)
        if result.error and not result.diagnostics:
            print(f"attnlint: error: {result.path}: {result.error}", file=sys.stderr)
    return _exit_code(args, results)


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
    try:
        return path.resolve().relative_to(cwd.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _emit(text: str, output_file: Optional[str]) -> None:
    if output_file:
        Path(output_file).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
        sys.stdout.flush()


def _check_stdin(args, settings: Settings, fixing: bool) -> int:
    from attnlint import engine
    from attnlint.reporters import render

    source = sys.stdin.read()
    display = args.stdin_filename or "-"
    if args.stdin_filename and settings.force_exclude and settings.is_excluded(Path(args.stdin_filename)):
        # An excluded path is left alone, as on disk: echo the text when fixing, report nothing.
        if fixing and not args.diff:
            sys.stdout.write(source)
        return EXIT_CLEAN
    if fixing:
        result = engine.fix_source(source, display, settings)
        if args.diff:
            return _print_diff([result])
        # The fixed source goes to stdout (editors replace the buffer with it); findings to stderr.
        sys.stdout.write(result.fixed_source if result.fixed_source is not None else source)
        if not args.fix_only and result.diagnostics:
            sys.stderr.write(render("concise", [result], unsafe_fixes=settings.unsafe_fixes, fix_mode=True))
    else:
        result = engine.check_source(source, display, settings)
        _emit(
            render(
                args.output_format,
                [result],
                unsafe_fixes=settings.unsafe_fixes,
                show_fixes=args.show_fixes,
                statistics=args.statistics,
            ),
            args.output_file,
        )
    return _exit_code(args, [result])


def _print_diff(results) -> int:
    changed = 0
    for result in results:
        before, after = result.original_source, result.fixed_source
        if before is None or after is None or before == after:
            continue
        changed += sum(result.fixed.values())
        sys.stdout.writelines(
            difflib.unified_diff(
                split_lines_keepends(before),
                split_lines_keepends(after),
                fromfile=f"a/{result.path}",
                tofile=f"b/{result.path}",
            )
        )
    if changed:
        print(f"\nWould fix {changed} error{'s' if changed != 1 else ''}.", file=sys.stderr)
    failed = [r for r in results if r.error]
    for result in failed:  # a file that could not be read or parsed has no diff, but it is not fine
        print(f"attnlint: error: {result.path}: {result.error}", file=sys.stderr)
    if any(r.internal_error for r in results):
        return EXIT_ERROR
    return EXIT_FINDINGS if changed or failed else EXIT_CLEAN


def _add_noqa(results, files) -> int:
    from attnlint.engine import read_source, write_atomically
    from attnlint.noqa import add_noqa

    added = 0
    by_display = {r.path: f for r, f in zip(results, files)}
    for result in results:
        rows = {}
        for diag in result.diagnostics:
            if diag.code in ("ATN001", "ATN002"):
                continue
            rows.setdefault(diag.noqa_row, []).append(diag.code)
        if not rows:
            continue
        path = by_display[result.path]
        decoded = read_source(path)
        new_text = add_noqa(decoded.text, rows)
        if new_text != decoded.text:
            write_atomically(path, decoded, new_text)
            added += len(rows)
    print(f"Added {added} noqa directive{'s' if added != 1 else ''}.")
    return EXIT_CLEAN


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
        try:
            rules = [registry.lookup(args.code)]
        except KeyError:
            print(f"attnlint: error: unknown rule `{args.code}`; see `attnlint rules`", file=sys.stderr)
            return EXIT_ERROR
    else:
        parser.parse_args(["rule", "--help"])
        return EXIT_ERROR
    if args.output_format == "json":
        records = [_rule_record(r) for r in rules]
        print(json.dumps(records if args.all else records[0], indent=2))
    else:
        print("\n\n".join(render_rule_page(r) for r in rules))
    return EXIT_CLEAN


def _verify(args) -> int:
    try:
        from attnlint.verify import verify_fix
    except ImportError as exc:  # pragma: no cover - verify is part of the package
        print(f"attnlint: error: verification unavailable: {exc}", file=sys.stderr)
        return EXIT_ERROR
    source = args.file.read_text(encoding="utf-8")
    params = {}
    for item in args.param:
        key, sep, raw = item.partition("=")
        if not sep:
            raise ConfigError(f"--param takes KEY=VALUE, not {item!r}")
        try:
            params[key] = json.loads(raw)
        except ValueError:
            params[key] = raw  # a bare string
    try:
        reports = verify_fix(
            args.code.upper(),
            source,
            entry=args.entry,
            params=params,
            devices=tuple(args.device) if args.device else None,
        )
    except ImportError:
        print("attnlint: error: verification needs torch: pip install 'attnlint[verify]'", file=sys.stderr)
        return EXIT_ERROR
    ok = True
    for report in reports:
        print(report.summary() if hasattr(report, "summary") else report)
        ok = ok and report.ok
    return EXIT_CLEAN if ok else EXIT_FINDINGS


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
