"""`attnlint verify` on the user's own code: findings found, entries built, fixes proven, reported.

End to end through the real command (a subprocess, as a user runs it) on the bundled examples and on
modules in the styles the rules cover; the HTML report is opened in a real headless browser.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
DATA = Path(__file__).resolve().parent / "data"


def attnlint(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "attnlint", *args], cwd=cwd, capture_output=True, text=True, timeout=600
    )


def by_entry(records):
    return {r["entry"]: r for r in records}


@pytest.fixture(scope="module")
def user_styles():
    proc = attnlint(
        "verify", str(DATA / "user_styles.py"), "--device", "cpu", "--dtype", "float32", "--output-format", "json"
    )
    return proc, json.loads(proc.stdout)


def test_user_styles_verdicts_and_exit_code(user_styles):
    proc, records = user_styles
    verdicts = {entry: r["verdict"] for entry, r in by_entry(records).items()}
    assert verdicts == {
        "HelperAttention (via attend)": "verified",  # the bug is in a helper; proven through its caller
        "ConfigAttention": "verified",  # built from a config dataclass
        "DictConfigAttention": "verified",  # built from a dict config (cfg["emb_dim"])
        "NeedsRotaryBase": "not-run",
    }
    assert proc.returncode == 1, proc.stderr  # not every finding verified


def test_json_fields(user_styles):
    _, records = user_styles
    record = by_entry(records)["ConfigAttention"]
    assert record["code"] == "ATN101"
    assert record["filename"].endswith("user_styles.py")
    source = (DATA / "user_styles.py").read_text().splitlines()
    row, column = record["location"]["row"], record["location"]["column"]
    assert source[row - 1][column - 1 :].startswith("q @ k.transpose(-2, -1)")
    (run,) = record["runs"]
    assert (run["device"], run["dtype"]) == ("cpu", "float32")
    assert run["backend"]
    assert 0 <= run["max_error"] <= run["bound"] < 1e-5


def test_a_module_that_cannot_be_built_says_what_would_make_it_work(user_styles):
    _, records = user_styles
    reason = by_entry(records)["NeedsRotaryBase"]["reason"]
    assert "rotary_base" in reason and "--init" in reason


def test_init_makes_it_build():
    target = f"{DATA / 'user_styles.py'}::NeedsRotaryBase"
    proc = attnlint("verify", target, "--device", "cpu", "--dtype", "float32", "--init", '{"rotary_base": 10000}')
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "NeedsRotaryBase" in proc.stdout and "1 verified" in proc.stdout
    assert "[1/1]" in proc.stderr  # progress while it runs


def test_init_from_pyproject(tmp_path):
    shutil.copy(DATA / "user_styles.py", tmp_path / "model.py")
    (tmp_path / "pyproject.toml").write_text(
        "[tool.attnlint]\n[tool.attnlint.verify]\ndevice = ['cpu']\ndtype = ['float32']\n"
        "[tool.attnlint.verify.init-by-entry]\nNeedsRotaryBase = {rotary_base = 500}\n"
    )
    proc = attnlint("verify", "model.py::NeedsRotaryBase", "--output-format", "json", cwd=tmp_path)
    (record,) = json.loads(proc.stdout)
    assert record["verdict"] == "verified", record
    assert [(r["device"], r["dtype"]) for r in record["runs"]] == [("cpu", "float32")]


def test_einops_style():
    pytest.importorskip("einops")
    proc = attnlint(
        "verify", str(DATA / "einops_style.py"), "--device", "cpu", "--dtype", "float32", "--output-format", "json"
    )
    (record,) = json.loads(proc.stdout)
    assert (record["entry"], record["verdict"]) == ("EinopsAttention", "verified"), record
    assert proc.returncode == 0


def test_check_never_runs_user_code(tmp_path):
    marker = tmp_path / "ran"
    source = (DATA / "user_styles.py").read_text() + f"\nopen({str(marker)!r}, 'w').close()\n"
    (tmp_path / "model.py").write_text(source)
    proc = attnlint("check", "--fix", "--unsafe-fixes", "--no-cache", "model.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not marker.exists()


# ---------------------------------------------------------------------------------------------
# A deliberately wrong fixer
# ---------------------------------------------------------------------------------------------
def wrong_scale_fixer(monkeypatch):
    """ATN101's fix scaled by the model width (`self.d_out`) instead of the head dim: a real wrong fix."""
    from attnlint import engine
    from attnlint.diagnostics import Edit, Fix

    original = engine._to_fix

    def to_fix(node_fix, module, positions):
        fix = original(node_fix, module, positions)
        # The right fix scales by the head dim the code names (`self.head_dim`).
        if fix is None or "self.head_dim" not in "".join(e.content for e in fix.edits):
            return fix
        edits = tuple(Edit(e.start, e.end, e.content.replace("self.head_dim", "self.d_out")) for e in fix.edits)
        return Fix(fix.message, fix.applicability, edits)

    monkeypatch.setattr(engine, "_to_fix", to_fix)


def test_wrong_fix_fails_verification(monkeypatch, capsys):
    from attnlint.cli import main

    wrong_scale_fixer(monkeypatch)
    code = main(
        [
            "verify",
            str(EXAMPLES / "multihead_attention.py"),
            "--device",
            "cpu",
            "--dtype",
            "float64",
            "--output-format",
            "json",
        ]
    )
    (record,) = json.loads(capsys.readouterr().out)
    assert record["verdict"] == "failed", record
    assert "fixed_matches_float64_naive_kernel" in record["reason"]
    assert code == 1


def test_fix_verify_refuses_a_wrong_fix_and_applies_the_right_ones(monkeypatch, tmp_path, capsys):
    from attnlint.cli import main

    for name in ("multihead_attention.py", "causal_attention.py"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    (tmp_path / "pyproject.toml").write_text(
        "[tool.attnlint]\n[tool.attnlint.verify]\ndevice = ['cpu']\ndtype = ['float32']\n"
    )
    wrong_scale_fixer(monkeypatch)
    monkeypatch.chdir(tmp_path)
    main(
        ["check", "--fix", "--unsafe-fixes", "--verify", "--no-cache", "multihead_attention.py", "causal_attention.py"]
    )
    err = capsys.readouterr().err
    assert (tmp_path / "multihead_attention.py").read_text() == (EXAMPLES / "multihead_attention.py").read_text()
    assert "ATN101 fix not applied: verification failed" in err
    fixed = (tmp_path / "causal_attention.py").read_text()
    assert fixed != (EXAMPLES / "causal_attention.py").read_text()
    assert "dim=-1" in fixed  # ATN102 verified and applied


# ---------------------------------------------------------------------------------------------
# The HTML report, in a real browser
# ---------------------------------------------------------------------------------------------
def chromium_binary():
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "verify.html"
    proc = attnlint(
        "verify",
        f"{EXAMPLES / 'padded_batch.py'}::attention",
        str(EXAMPLES / "multihead_attention.py"),
        "--device",
        "cpu",
        "--dtype",
        "float32",
        "--report",
        str(out),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def test_report_is_self_contained(report):
    html = report.read_text()
    assert "<svg" in html and html.count('class="heatmap"') == 6  # original, fixed, reference x 2
    for needle in ("http://", "https://", "<script", "<link"):
        assert needle not in html.replace('xmlns="http://www.w3.org/2000/svg"', ""), needle
    assert "ATN203" in html and "ATN101" in html
    assert '<span class="add">' in html  # the diff


def test_report_shows_heat_maps_in_a_browser(report, tmp_path):
    browser = chromium_binary()
    if browser is None:
        pytest.skip("no chromium binary (Debian: apt-get install chromium)")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from png_reader import read_png

    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1000,2600",
            "--force-device-scale-factor=0.5",
            f"--screenshot={shot}",
            report.as_uri(),
        ],
        capture_output=True,
        timeout=120,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    width, height, rows = read_png(shot.read_bytes())
    pixels = [p for row in rows for p in row]
    magenta = sum(1 for r, g, b in pixels if r > 230 and g < 40 and b > 230)
    dark_blue = sum(1 for r, g, b in pixels if r < 60 and g < 90 and 90 < b < 150)
    cell = 13 * 13  # a 26-pixel cell at device scale 0.5
    # ATN203's original: the rows of the padded queries are NaN. The sequence shown is the first
    # whose weights change most (NaN), the one of length 4: a magenta block of 3 x 7 cells.
    assert magenta >= 0.8 * 21 * cell, magenta
    # Weights near 1 are dark blue: ATN101's maps (query 0 of a causal mask attends only to key 0).
    assert dark_blue >= 3 * 0.8 * cell, dark_blue


def test_a_missing_device_is_not_run_not_verified():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    proc = attnlint(
        "verify",
        str(EXAMPLES / "multihead_attention.py"),
        "--device",
        "cpu,cuda",
        "--dtype",
        "float32",
        "--output-format",
        "json",
    )
    (record,) = json.loads(proc.stdout)
    assert record["verdict"] == "not-run", record
    assert "CUDA" in record["reason"]
    assert [(r["device"], r["verdict"]) for r in record["runs"]] == [("cpu", "verified"), ("cuda", "not-run")]
    assert proc.returncode == 1
