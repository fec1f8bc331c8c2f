"""attnlint under flake8: the real flake8 in a subprocess, and the checker class in-process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import attnlint
from attnlint.flake8_plugin import AttnlintChecker

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "self_attention_v1.py"
MSG = "ATN103 `keys.T` reverses all 3 axes of a batched tensor; use `.transpose(-2, -1)` to swap only the last two"

T103 = (
    "def attention(q, k, v):\n"
    "    b, n, d = k.shape\n"
    "    scores = q @ k.T / d ** 0.5{c}\n"
    "    return scores.softmax(-1) @ v\n"
)


def flake8(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "flake8", *args], capture_output=True, text=True, timeout=120, cwd=cwd
    )


@pytest.fixture
def example(tmp_path):
    path = tmp_path / "v1.py"
    path.write_bytes(EXAMPLE.read_bytes())
    return path


@pytest.fixture(autouse=True)
def _reset_checker_state():
    # The checker caches settings on the class; never leak them between tests.
    AttnlintChecker._config_path = None
    AttnlintChecker._settings = None
    yield
    AttnlintChecker._config_path = None
    AttnlintChecker._settings = None


# ---------------------------------------------------------------------------------------------
# Real flake8
# ---------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_flake8_reports_exact_line(example):
    proc = flake8(example.parent, "--select=ATN", "v1.py")
    assert proc.stdout == f"v1.py:26:33: {MSG}\n", proc.stderr
    assert proc.returncode == 1


@pytest.mark.slow
def test_flake8_noqa_silences(example):
    text = example.read_text(encoding="utf-8")
    example.write_text(
        text.replace("keys.T  # (num_tokens, num_tokens)", "keys.T  # noqa: ATN103"), encoding="utf-8"
    )
    proc = flake8(example.parent, "--select=ATN", "v1.py")
    assert (proc.returncode, proc.stdout) == (0, ""), proc.stderr


@pytest.mark.slow
def test_flake8_extend_ignore_silences(example):
    proc = flake8(example.parent, "--select=ATN", "--extend-ignore=ATN103", "v1.py")
    assert (proc.returncode, proc.stdout) == (0, ""), proc.stderr


@pytest.mark.slow
def test_flake8_file_without_trigger_text(tmp_path):
    (tmp_path / "plain.py").write_text("import torch\n\nx = torch.randn(2, 3) @ torch.randn(3, 2)\n",
                                       encoding="utf-8")
    proc = flake8(tmp_path, "--select=ATN", "plain.py")
    assert (proc.returncode, proc.stdout) == (0, ""), proc.stderr


@pytest.mark.slow
def test_flake8_setup_cfg_attnlint_config_option(example):
    pyproject = example.parent / "conf" / "pyproject.toml"
    pyproject.parent.mkdir()
    pyproject.write_text('[tool.attnlint]\nselect = ["ATN103"]\n', encoding="utf-8")
    (example.parent / "setup.cfg").write_text(
        "[flake8]\nselect = ATN\nattnlint-config = conf/pyproject.toml\n", encoding="utf-8"
    )
    proc = flake8(example.parent, "v1.py")
    assert proc.stdout == f"v1.py:26:33: {MSG}\n", proc.stderr
    assert proc.returncode == 1
    assert "attnlint-config" not in proc.stderr
    # The option really reaches the plugin: point it at a config attnlint rejects.
    pyproject.write_text("[tool.attnlint.batched-transpose]\nfoo = 1\n", encoding="utf-8")
    proc = flake8(example.parent, "v1.py")
    assert proc.returncode != 0
    assert "unknown option(s) for ATN103 (batched-transpose): foo" in proc.stderr


@pytest.mark.slow
def test_flake8_lists_plugin_version(tmp_path):
    proc = flake8(tmp_path, "--version")
    assert proc.returncode == 0
    assert f"attnlint: {attnlint.__version__}" in proc.stdout


# ---------------------------------------------------------------------------------------------
# The checker in-process
# ---------------------------------------------------------------------------------------------
def _run_checker(source: str, filename: str = "x.py"):
    checker = AttnlintChecker(None, filename, source.splitlines(keepends=True))
    return list(checker.run())


def test_checker_version_matches_package():
    assert AttnlintChecker.version == attnlint.__version__
    assert AttnlintChecker.name == "attnlint"


def test_checker_yields_zero_based_column():
    (item,) = _run_checker(T103.format(c=""))
    line, col, message, kind = item
    assert (line, col) == (3, 17)
    assert message.startswith("ATN103 `k.T` reverses all 3 axes")
    assert kind is AttnlintChecker


def test_checker_leaves_noqa_to_flake8():
    # flake8 applies `# noqa` to what the plugin yields; the plugin must not drop it first.
    assert [m[2][:6] for m in _run_checker(T103.format(c="  # noqa: ATN103"))] == ["ATN103"]


def test_checker_skips_syntax_errors():
    assert _run_checker("def f(q, k:\n    return q @ k.T\n") == []


def test_checker_does_not_parse_without_trigger_text(monkeypatch):
    import libcst

    def no_parse(*args, **kwargs):  # pragma: no cover - must not be called
        raise AssertionError("parsed a file with no trigger text")

    monkeypatch.setattr(libcst, "parse_module", no_parse)
    assert _run_checker("import torch\nx = torch.ones(3)\n") == []


def test_checker_parse_options_reads_config(tmp_path):
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text("[tool.attnlint]\n", encoding="utf-8")
    AttnlintChecker.parse_options(SimpleNamespace(attnlint_config=str(cfg)))
    assert AttnlintChecker._config_path == str(cfg)
    assert len(_run_checker(T103.format(c=""))) == 1


def test_checker_add_options_registers_config_option():
    seen = {}

    class Manager:
        def add_option(self, *args, **kwargs):
            seen[args] = kwargs

    AttnlintChecker.add_options(Manager())
    assert ("--attnlint-config",) in seen
    assert seen[("--attnlint-config",)]["parse_from_config"] is True
