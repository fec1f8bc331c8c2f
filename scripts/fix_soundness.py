#!/usr/bin/env python3
"""Fix soundness at scale: `attnlint check --fix --unsafe-fixes` over a copy of a real corpus.

    python scripts/fix_soundness.py                  # torch's own sources (the installed package)
    python scripts/fix_soundness.py PATH [PATH...]   # any trees or files
    python scripts/fix_soundness.py --keep DIR       # keep the fixed copy in DIR to inspect it
    python scripts/fix_soundness.py --rule-examples  # add every rule's invalid examples as files

torch's sources hold almost no findings (attnlint is precise), so the fixes themselves are
exercised by adding the rules' invalid examples (`--rule-examples`) and `examples/`.

Independent of the test suite: it runs the installed `attnlint` command on a scratch copy and
checks three things, printing the numbers and exiting 1 if any check fails:

1. every file that parsed before the fixes (CPython's parser) still parses after them, and LibCST,
   which the next run needs, parses every file the fixes changed;
2. a second `--fix` run changes nothing (the fixes settle in one run);
3. every file without a finding before the run is byte-identical after it (the fixes touch only
   files with findings).

The corpus is located without importing torch (its package directory is found from its spec).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Sequence, Set


def torch_sources() -> Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("fix_soundness: torch is not installed; pass a corpus path (pip install torch==2.13.0)")
    return Path(list(spec.submodule_search_locations)[0])


def copy_corpus(sources: Sequence[Path], destination: Path) -> List[Path]:
    """Copy the .py files of `sources` under `destination`; the copies, sorted."""
    copies = []
    for index, source in enumerate(sources):
        root = destination / f"{index}-{source.name}"
        files = [source] if source.is_file() else sorted(p for p in source.rglob("*.py") if p.is_file())
        for path in files:
            target = root / (path.name if source.is_file() else path.relative_to(source))
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            copies.append(target)
    return sorted(copies)


def write_rule_examples(destination: Path) -> List[Path]:
    """Every rule's invalid examples, one file each (they are the code the fixes exist for)."""
    from attnlint.rules import registry

    written = []
    for rule in registry.all_rules():
        for index, example in enumerate(getattr(rule, "INVALID", ())):
            target = destination / "rule-examples" / f"{rule.code.lower()}_{index:02d}.py"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(example.source, encoding="utf-8")
            written.append(target)
    return written


def cpython_parses(data: bytes) -> bool:
    try:
        ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def libcst_parses(data: bytes) -> bool:
    import libcst

    try:
        libcst.parse_module(data)
    except Exception:
        return False
    return True


def snapshot(files: Sequence[Path]) -> Dict[Path, bytes]:
    return {path: path.read_bytes() for path in files}


def attnlint(root: Path, *extra: str) -> subprocess.CompletedProcess:
    command = [
        sys.executable, "-m", "attnlint", "check", "--no-cache", "--isolated", "--exit-zero",
        "--output-format", "json", *extra, ".",
    ]
    return subprocess.run(command, cwd=root, capture_output=True, text=True)


def findings(proc: subprocess.CompletedProcess, root: Path) -> List[dict]:
    # --exit-zero: 0, or 2 when attnlint failed on some file (ATN003, counted in the findings).
    try:
        return json.loads(proc.stdout)
    except ValueError:
        sys.exit(f"fix_soundness: attnlint exited {proc.returncode} without a report:\n{proc.stderr[-3000:]}")


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:12]


def main(argv: Sequence[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, help="corpus (default: the installed torch package)")
    parser.add_argument("--keep", type=Path, help="copy the corpus here (must not exist) and keep it")
    parser.add_argument("--rule-examples", action="store_true", help="add every rule's invalid examples")
    args = parser.parse_args(argv)
    sources = [p.resolve() for p in args.paths] or [torch_sources()]
    for source in sources:
        if not source.exists():
            sys.exit(f"fix_soundness: no such file or directory: {source}")

    scratch = args.keep or Path(tempfile.mkdtemp(prefix="attnlint-fix-soundness-"))
    if args.keep:
        scratch.mkdir(parents=True)
    try:
        files = copy_corpus(sources, scratch)
        if args.rule_examples:
            files = sorted(files + write_rule_examples(scratch))
        before = snapshot(files)
        lines = sum(data.count(b"\n") for data in before.values())
        parsed_before = {path for path, data in before.items() if cpython_parses(data)}
        print(f"corpus: {', '.join(map(str, sources))}")
        print(f"files: {len(files)}, lines: {lines}, parse (CPython): {len(parsed_before)}")

        started = time.perf_counter()
        reported = findings(attnlint(scratch, "--unsafe-fixes"), scratch)
        check_s = time.perf_counter() - started
        by_file: Dict[Path, List[dict]] = {}
        for record in reported:
            by_file.setdefault((scratch / record["filename"]).resolve(), []).append(record)
        with_findings: Set[Path] = {path for path in files if path.resolve() in by_file}
        fixable = sum(1 for r in reported if r["fix"] and r["fix"]["applicability"] in ("safe", "unsafe"))
        codes: Dict[str, int] = {}
        for record in reported:
            codes[record["code"]] = codes.get(record["code"], 0) + 1
        print(f"findings: {len(reported)} in {len(with_findings)} files ({fixable} with a fix); by code: "
              + (", ".join(f"{c} {n}" for c, n in sorted(codes.items())) or "none")
              + f"; check took {check_s:.1f} s")

        started = time.perf_counter()
        remaining = findings(attnlint(scratch, "--fix", "--unsafe-fixes"), scratch)
        fix_s = time.perf_counter() - started
        after = snapshot(files)
        changed = [path for path in files if after[path] != before[path]]
        print(f"first --fix run: {len(changed)} files changed, {len(remaining)} findings remain; took {fix_s:.1f} s")

        failures: List[str] = []
        for path in sorted(parsed_before):
            if not cpython_parses(after[path]):
                failures.append(f"no longer parses (CPython): {path.relative_to(scratch)}")
        for path in changed:
            if not libcst_parses(after[path]):
                failures.append(f"no longer parses (LibCST): {path.relative_to(scratch)}")
        for path in changed:
            if path not in with_findings:
                failures.append(
                    f"changed without a finding: {path.relative_to(scratch)} "
                    f"({digest(before[path])} -> {digest(after[path])})"
                )

        findings(attnlint(scratch, "--fix", "--unsafe-fixes"), scratch)
        again = snapshot(files)
        unsettled = [path for path in files if again[path] != after[path]]
        for path in unsettled:
            failures.append(f"second --fix run changed it again: {path.relative_to(scratch)}")
        print(f"second --fix run: {len(unsettled)} files changed")

        untouched = sum(1 for path in files if path not in with_findings and after[path] == before[path])
        print(f"files without a finding byte-identical: {untouched}/{len(files) - len(with_findings)}")
        print(f"files that parsed and still parse: {sum(1 for p in parsed_before if cpython_parses(after[p]))}"
              f"/{len(parsed_before)}")
        if failures:
            print(f"FAILED ({len(failures)}):")
            for failure in failures:
                print(f"  {failure}")
            return 1
        print("OK: every parsed file still parses, a second run changes nothing, files without findings are untouched")
        return 0
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
