"""``attnlint verify``: the command's logic (the CLI only wires arguments to :func:`run`).

    attnlint verify src/model.py                         # every fixable finding in the file
    attnlint verify src/model.py::MultiHeadAttention --device cpu,cuda --dtype float32,bfloat16
    attnlint verify src/ --report verify.html --output-format json
    attnlint verify ATN103 src/model.py --entry SelfAttentionV1   # one rule, one entry (older form)

Progress goes to stderr while it runs; the table (or the JSON array) to stdout. Exit 0 only when
every finding asked for is verified (or equivalent), 1 otherwise, 2 for usage errors.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, TextIO

from attnlint.config import ConfigError
from attnlint.verify.options import KNOWN_DEVICES, KNOWN_DTYPES, load_verify_options, merged, parse_init, split_list
from attnlint.verify.session import FindingVerdict, exit_code, parse_target, verify_source

SYMBOL = {"verified": "ok", "equivalent": "ok (=)", "failed": "FAILED", "not-run": "not run"}


def split_rule_and_targets(targets: Sequence[str]) -> tuple:
    """``[CODE] PATH...``: a first word that is a rule code or name (and not a path) selects a rule."""
    from attnlint.rules import registry

    names = {r.code for r in registry.all_rules()} | {r.name for r in registry.all_rules()}
    first = targets[0] if targets else ""
    if len(targets) > 1 and not Path(first).exists():
        if first.upper() in names or first in names:
            by_name = {r.name: r.code for r in registry.all_rules()}
            return by_name.get(first, first.upper()), list(targets[1:])
        if re.fullmatch(r"[A-Za-z]+[0-9]+", first):
            known = ", ".join(sorted(r.code for r in registry.all_rules()))
            raise ConfigError(f"unknown rule {first!r}; known: {known}")
    return None, list(targets)


def run(
    targets: Sequence[str],
    *,
    entry: Optional[str] = None,
    devices: Optional[str] = None,
    dtypes: Optional[str] = None,
    init: Optional[str] = None,
    params: Optional[Dict[str, Any]] = None,
    report: Optional[Path] = None,
    output_format: str = "text",
    timeout_s: Optional[float] = None,
    config: Optional[Path] = None,
    out: Optional[TextIO] = None,
    err: Optional[TextIO] = None,
) -> int:
    from attnlint.config import load_settings

    # The streams of the moment (a default bound at import would keep whatever sys.stdout was then).
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    from attnlint.discovery import collect_files

    rule, targets = split_rule_and_targets(targets)
    if importlib.util.find_spec("torch") is None:
        raise ImportError("verification needs torch")
    files: List[tuple] = []
    for target in targets:
        path, target_entry = parse_target(target)
        if not path.exists():
            raise FileNotFoundError(str(path))
        if path.is_dir():
            settings = load_settings(config, cwd=path.resolve())
            files.extend((f, entry) for f in collect_files([str(path)], settings))
        else:
            files.append((path, target_entry or entry))
    first = files[0][0] if files else Path.cwd()
    overrides = {
        "devices": split_list(devices, "device", KNOWN_DEVICES) if devices else None,
        "dtypes": split_list(dtypes, "dtype", KNOWN_DTYPES) if dtypes else None,
        "init": parse_init(init) if init else None,
        "timeout_s": timeout_s,
    }
    options = merged(load_verify_options(Path(first).resolve(), config), overrides)
    findings: List[FindingVerdict] = []
    skipped: List[str] = []
    cwd = Path.cwd()
    for path, file_entry in files:
        settings = load_settings(config, cwd=Path(path).resolve().parent)
        if rule is not None:
            from dataclasses import replace

            settings = replace(settings, select=[rule], extend_select=[], ignore=[])
        display = _display(Path(path), cwd)
        try:
            source = Path(path).read_text(encoding="utf-8")
            findings.extend(
                verify_source(
                    source,
                    display,
                    settings,
                    options,
                    entry=file_entry,
                    params=params,
                    pictures=report is not None,
                    progress=lambda event, f, i, n: _progress(err, event, f, i, n),
                    skipped=skipped,
                )
            )
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            print(f"attnlint: error: {display}: {exc}", file=err)
            return 2
    if skipped:
        codes = ", ".join(sorted(set(skipped)))
        print(
            f"attnlint: {len(skipped)} fixable finding(s) of rules with no verification recipe ({codes}) not verified",
            file=err,
        )
    if output_format == "json":
        out.write(json.dumps([f.to_json() for f in findings], indent=2, allow_nan=False, default=str) + "\n")
    else:
        out.write(render_table(findings))
    if report is not None:
        from attnlint.verify.html_report import write_report

        write_report(report, findings)
        print(f"attnlint: wrote {report}", file=err)
    return exit_code(findings)


def _display(path: Path, cwd: Path) -> str:
    try:
        return str(path.resolve().relative_to(cwd.resolve()))
    except ValueError:
        return str(path)


def _progress(err: TextIO, event: str, f: FindingVerdict, i: int, n: int) -> None:
    where = f"{f.filename}:{f.row}:{f.column} {f.code} in {f.entry or '?'}"
    if event == "start":
        err.write(f"[{i}/{n}] {where} ...\n")
    else:
        err.write(f"[{i}/{n}] {where}: {f.verdict} ({f.seconds:.1f} s)\n")
    err.flush()


def render_table(findings: Sequence[FindingVerdict]) -> str:
    if not findings:
        return "No fixable findings to verify.\n"
    rows = [("location", "rule", "entry", "verdict", "device/dtype: max error / bound", "reason")]
    for f in findings:
        runs = "; ".join(f"{r['device']}/{r['dtype']}: {_num(r['max_error'])} / {_num(r['bound'])}" for r in f.runs())
        reason = "" if f.passed else f.reason
        rows.append(
            (f"{f.filename}:{f.row}:{f.column}", f.code, f.entry or "-", SYMBOL.get(f.verdict, f.verdict), runs, reason)
        )
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = []
    for row in rows:
        lines.append(
            "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:5])) + ("  " + row[5] if row[5] else "")
        )
    counts: Dict[str, int] = {}
    for f in findings:
        counts[f.verdict] = counts.get(f.verdict, 0) + 1
    summary = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
    return "\n".join(lines) + f"\n\n{len(findings)} finding(s): {summary}\n"


def _num(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.1e}"


def parse_params(items: Sequence[str]) -> Dict[str, Any]:
    params: Dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep:
            raise ConfigError(f"--param takes KEY=VALUE, not {item!r}")
        try:
            params[key] = json.loads(raw)
        except ValueError:
            params[key] = raw  # a bare string
    return params
