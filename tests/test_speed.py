"""How the work is done, not how fast: what a warm run loads, what the pre-filter keeps, how the
pool shares the work. Timings belong in scripts/benchmark.py, never here."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from attnlint import engine, prefilter, scheduling
from attnlint.config import Settings
from attnlint.diagnostics import FileResult
from attnlint.discovery import _may_be_in_repository
from attnlint.rules import registry

REPO = Path(__file__).resolve().parents[1]
BUGGY = "def f(q, k):\n    b, n, d = k.shape\n    return q @ k.T\n"


# ---------------------------------------------------------------------------------------------
# A warm run answers from the cache without loading the parser, the engine or the rules
# ---------------------------------------------------------------------------------------------
_LOADED = """
import json, sys
from attnlint.cli import main
code = main(["check", "--output-format", "json", "-o", "report.json", "."])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _run_cli_in_subprocess(cwd: Path) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _LOADED], cwd=cwd, capture_output=True, text=True, check=True, timeout=300
    )
    record = json.loads(out.stdout.strip().splitlines()[-1])
    record["report"] = json.loads((cwd / "report.json").read_text(encoding="utf-8"))
    return record


@pytest.fixture(scope="module")
def warm_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("warm")
    (root / "buggy.py").write_text(BUGGY, encoding="utf-8")
    (root / "clean.py").write_text("import torch\nx = torch.ones(3).softmax(-1)\n", encoding="utf-8")
    (root / "plain.py").write_text("x = 1\n", encoding="utf-8")
    cold = _run_cli_in_subprocess(root)
    warm = _run_cli_in_subprocess(root)
    return cold, warm


def test_warm_run_reports_what_the_cold_run_did(warm_run):
    cold, warm = warm_run
    assert cold["code"] == warm["code"] == 1
    assert warm["report"] == cold["report"]
    assert [d["code"] for d in warm["report"]] == ["ATN103"]


def test_cold_run_loads_the_engine_and_rules(warm_run):
    cold, _ = warm_run  # the check below is only meaningful if a miss does load them
    assert "attnlint.engine" in cold["modules"] and "attnlint.analysis" in cold["modules"]


def test_warm_run_loads_no_engine_analysis_or_rule_module(warm_run):
    _, warm = warm_run
    loaded = set(warm["modules"])
    assert "attnlint.engine" not in loaded
    assert not {m for m in loaded if m.startswith(("attnlint.analysis", "attnlint.fixers"))}
    rule_modules = {m for m in loaded if m.startswith("attnlint.rules.")} - {
        "attnlint.rules.base",
        "attnlint.rules.registry",
    }
    assert not rule_modules


def test_warm_run_does_not_import_libcst(warm_run):
    _, warm = warm_run
    assert "libcst" not in warm["modules"]


# ---------------------------------------------------------------------------------------------
# The pre-filter
# ---------------------------------------------------------------------------------------------
def _example_sources():
    for path in sorted((REPO / "examples").glob("*.py")):
        yield path.name, path.read_text(encoding="utf-8")
    for rule in registry.all_rules():
        for index, example in enumerate(list(rule.INVALID) + list(rule.VALID)):
            yield f"{rule.code}-{index}", example.source


EXAMPLES = list(_example_sources())


@pytest.mark.parametrize("name,source", EXAMPLES, ids=[name for name, _ in EXAMPLES])
def test_prefilter_keeps_every_file_with_a_finding(name, source, monkeypatch):
    settings = Settings(select=["ALL"])
    rules = engine.rules_for("example.py", settings)
    kept = engine.might_match(source, rules)
    monkeypatch.setattr(engine, "might_match", lambda *_args: True)  # analyse everything
    found = [d for d in engine.check_source(source, "example.py", settings).diagnostics if d.code >= "ATN1"]
    if found:
        assert kept, f"the pre-filter drops {name}, which has {[d.code for d in found]}"


TEXTS = [source for _, source in EXAMPLES] + [
    "x = float('-inf')",
    "infinity = 1",
    "y = w.T",
    "y = w.Tx",
    "# mentions softmax only in a comment",
    "",
    "nothing here at all",
]


def test_per_trigger_search_agrees_with_one_alternation():
    patterns = sorted({t for rule in registry.all_rules() for t in rule.triggers})
    alternation = re.compile("|".join(f"(?:{p})" for p in patterns))
    found = prefilter.triggers(tuple(patterns))
    for text in TEXTS:
        assert found.search(text) == (alternation.search(text) is not None), text


def test_a_rule_that_names_where_it_reports_skips_files_without_that_text():
    """ATN208's triggers name what a mask helper is written with (`keepdim`, `where`), but it
    reports only where scores are normalised or a mask is given to an attention API."""
    rules = [r() for r in registry.all_rules() if r.code == "ATN208"]
    assert rules and rules[0].reported_where
    helper_only = "import torch\n\ndef pool(x):\n    return x.mean(dim=1, keepdim=True)\n"
    assert not engine.might_match(helper_only, rules)
    with_scores = helper_only + "\ndef attend(s, keep):\n    return (s + keep).softmax(-1)\n"
    assert engine.might_match(with_scores, rules)
    # A rule without `reported_where` keeps the triggers alone.
    everything = engine.rules_for("x.py", Settings(select=["ALL"]))
    assert engine.might_match("x = y.T\n", everything)


def test_trusted_parse_builds_the_same_tree_and_leaves_node_checks_on():
    import libcst as cst

    from attnlint.parseguard import parse_module

    for name, source in EXAMPLES[:40]:
        fast, checked = parse_module(source), cst.parse_module(source)
        assert fast.code == source and fast.deep_equals(checked), name
    # Validation is back on once the parse returns: an invalid node still raises.
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")


@pytest.mark.parametrize(
    "pattern,literal",
    [
        ("softmax", "softmax"),
        (r"\binf\b", "inf"),
        (r"\.T\b", ".T"),
        (r"^register_buffer", "register_buffer"),
        ("pad_(sequence|packed)", "pad_"),
        ("mask|fill", ""),  # either may match: no single literal is required
        ("(?i)mask", ""),  # MASK matches too
        ("[", ""),  # not a regex
    ],
)
def test_required_literal(pattern, literal):
    assert prefilter.required_literal(pattern) == literal


# ---------------------------------------------------------------------------------------------
# Scheduling
# ---------------------------------------------------------------------------------------------
def test_chunks_cover_every_file_once_largest_first():
    sizes = [10, 500_000, 3_000, 70_000, 40_000, 40_000, 1, 0, 64 * 1024]
    chunks = scheduling.plan_chunks(sizes, chunk_bytes=64 * 1024)
    flat = [p for chunk in chunks for p in chunk]
    assert sorted(flat) == list(range(len(sizes)))
    assert [sizes[p] for p in flat] == sorted(sizes, reverse=True)
    for chunk in chunks:
        assert len(chunk) == 1 or sum(sizes[p] for p in chunk) <= 64 * 1024


def _record_worker(job, settings):
    """Stands in for checking a file: says which process did it, and holds the first chunks until
    a second process has started one, so the test fails if one worker does all the work."""
    marks = Path(job.path).parent / "marks"
    (marks / str(os.getpid())).touch()
    deadline = time.monotonic() + 60
    while len(list(marks.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    return FileResult(path=job.display, error=str(os.getpid()))


@pytest.mark.skipif(multiprocessing.get_start_method() != "fork", reason="the stand-in is inherited by fork only")
def test_a_cold_run_shares_the_files_between_both_workers(tmp_path, monkeypatch):
    (tmp_path / "marks").mkdir()
    jobs = []
    for i in range(8):
        path = tmp_path / f"f{i}.py"
        path.write_text("x = 1\n" * (20_000 + i), encoding="utf-8")  # well past the pool's threshold
        jobs.append(scheduling.Job(path=str(path), display=path.name, fix=False, write=False))
    monkeypatch.setattr(scheduling, "_run_one", _record_worker)
    results = scheduling.process_files(jobs, Settings(root=tmp_path), workers=2)
    assert [r.path for r in results] == [j.display for j in jobs]
    workers = {r.error for r in results}
    assert len(workers) == 2 and str(os.getpid()) not in workers


def test_a_few_small_files_are_checked_without_a_pool(tmp_path, monkeypatch):
    def no_pool(*_args, **_kwargs):
        raise AssertionError("started a pool for a few small files")

    monkeypatch.setattr(scheduling, "ProcessPoolExecutor", no_pool)
    jobs = []
    for i in range(10):
        path = tmp_path / f"f{i}.py"
        path.write_text(BUGGY, encoding="utf-8")
        jobs.append(scheduling.Job(path=str(path), display=path.name, fix=False, write=False))
    results = scheduling.process_files(jobs, Settings(root=tmp_path), workers=2)
    assert [d.code for r in results for d in r.diagnostics] == ["ATN103"] * 10


def test_results_without_findings_do_not_keep_the_source(tmp_path):
    (tmp_path / "buggy.py").write_text(BUGGY, encoding="utf-8")
    (tmp_path / "clean.py").write_text("x = 1\n", encoding="utf-8")
    jobs = [scheduling.Job(str(tmp_path / n), n, fix=False, write=False) for n in ("buggy.py", "clean.py")]
    for use_cache in (False, True, True):  # uncached, then a cold and a warm cached run
        jobs = [scheduling.Job(j.path, j.display, False, False, use_cache=use_cache) for j in jobs]
        buggy, clean = scheduling.process_files(jobs, Settings(root=tmp_path), workers=1)
        assert buggy.source == BUGGY and buggy.diagnostics
        assert clean.source is None and not clean.diagnostics


def test_no_repository_is_looked_for_where_there_is_no_git_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("GIT_DIR", raising=False)
    monkeypatch.delenv("GIT_WORK_TREE", raising=False)
    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    if any((d / ".git").exists() for d in (tmp_path, *tmp_path.parents)):
        pytest.skip("the temporary directory is inside a git repository")
    assert not _may_be_in_repository(inner)
    (tmp_path / "a" / ".git").mkdir()
    assert _may_be_in_repository(inner)
