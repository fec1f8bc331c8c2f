"""`[tool.attnlint]` in pyproject.toml, and how the command line overrides it."""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from attnlint import cli
from attnlint.config import ConfigError, find_config, load_settings
from attnlint.rules import registry

T103 = (
    "def attention(q, k, v):\n"
    "    b, n, d = k.shape\n"
    "    scores = q @ k.T / d ** 0.5\n"
    "    return scores.softmax(-1) @ v\n"
)
T103_FIXED = T103.replace("k.T /", "k.transpose(-2, -1) /")
T102 = (
    "def forward(self, q, k, v):\n"
    "    b, n, d = q.shape\n"
    "    scores = q @ k.transpose(-2, -1) * d ** -0.5\n"
    "    return scores.softmax(1) @ v\n"
)
T102_FIXED = T102.replace("softmax(1)", "softmax(-1)")
T101 = (
    "import torch\n"
    "def forward(self, x):\n"
    "    queries = self.W_q(x)\n"
    "    keys = self.W_k(x)\n"
    "    attn_scores = queries @ keys.transpose(-2, -1)\n"
    "    return torch.softmax(attn_scores, dim=-1)\n"
)


def run(capsys, *argv):
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def findings(out: str):
    """`path:CODE` for each concise finding line."""
    rows = []
    for line in out.splitlines():
        if ": ATN" in line:
            location, rest = line.split(": ", 1)
            rows.append(f"{location.split(':')[0]}:{rest.split()[0]}")
    return rows


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def project(tmp_path, monkeypatch):
    """tmp_path as cwd with t101/t102/t103.py; returns a function that writes pyproject.toml."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "t101.py", T101)
    write(tmp_path / "t102.py", T102)
    write(tmp_path / "t103.py", T103)

    def configure(body: str) -> Path:
        return write(tmp_path / "pyproject.toml", textwrap.dedent(body))

    configure.root = tmp_path
    return configure


def check(capsys, *args):
    return run(capsys, "check", "--output-format", "concise", *args)


# ---------------------------------------------------------------------------------------------
# Selection
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "body,expected",
    [
        ("", ["t101.py:ATN101", "t102.py:ATN102", "t103.py:ATN103"]),
        ('select = ["ATN103"]', ["t103.py:ATN103"]),
        ('select = ["ATN10"]\nignore = ["ATN102"]', ["t101.py:ATN101", "t103.py:ATN103"]),
        ('select = ["ATN101"]\nextend-select = ["ATN103"]', ["t101.py:ATN101", "t103.py:ATN103"]),
        ('select = ["ALL"]\nignore = ["ATN1"]', []),
        ('ignore = ["ATN101", "ATN103"]', ["t102.py:ATN102"]),
    ],
)
def test_select_ignore_extend_select(project, capsys, body, expected):
    project(f"[tool.attnlint]\n{body}\n")
    code, out, err = check(capsys)
    assert err == ""
    assert findings(out) == expected
    assert code == (1 if expected else 0)


def test_cli_select_overrides_config_select(project, capsys):
    project('[tool.attnlint]\nselect = ["ATN101"]\n')
    code, out, _ = check(capsys, "--select", "ATN103")
    assert findings(out) == ["t103.py:ATN103"]


def test_cli_ignore_adds_to_config_ignore(project, capsys):
    project('[tool.attnlint]\nignore = ["ATN101"]\n')
    code, out, _ = check(capsys, "--ignore", "ATN102")
    assert findings(out) == ["t103.py:ATN103"]


def test_cli_extend_select_adds_to_config(project, capsys):
    project('[tool.attnlint]\nselect = ["ATN101"]\nextend-select = ["ATN102"]\n')
    code, out, _ = check(capsys, "--extend-select", "ATN103")
    assert findings(out) == ["t101.py:ATN101", "t102.py:ATN102", "t103.py:ATN103"]


def test_cli_select_overrides_config_ignore(project, capsys):
    project('[tool.attnlint]\nignore = ["ATN103"]\n')
    code, out, _ = check(capsys, "--select", "ATN103")
    assert findings(out) == ["t103.py:ATN103"]
    assert code == 1


def test_unknown_selector_in_config_exits_2(project, capsys):
    project('[tool.attnlint]\nselect = ["ATN9"]\n')
    code, out, err = check(capsys)
    assert code == 2
    assert out == ""
    assert "unknown rule selector `ATN9`" in err


# ---------------------------------------------------------------------------------------------
# per-file-ignores
# ---------------------------------------------------------------------------------------------
def test_per_file_ignores_glob(project, capsys):
    write(project.root / "tests" / "test_x.py", T103)
    write(project.root / "src" / "x.py", T103)
    project('[tool.attnlint.per-file-ignores]\n"tests/*" = ["ATN103"]\n"t10?.py" = ["ATN1"]\n')
    code, out, _ = check(capsys)
    assert code == 1
    assert findings(out) == ["src/x.py:ATN103"]


def test_per_file_ignores_negation(project, capsys):
    write(project.root / "src" / "x.py", T103)
    # Everything NOT under src/ ignores ATN103.
    project('[tool.attnlint.per-file-ignores]\n"!src/**" = ["ATN103"]\n')
    code, out, _ = check(capsys)
    assert findings(out) == ["src/x.py:ATN103", "t101.py:ATN101", "t102.py:ATN102"]


def test_per_file_ignores_relative_to_config_dir(project, capsys, monkeypatch):
    write(project.root / "pkg" / "a.py", T103)
    write(project.root / "pkg" / "b.py", T103)
    project('[tool.attnlint.per-file-ignores]\n"pkg/a.py" = ["ATN103"]\n')
    monkeypatch.chdir(project.root / "pkg")  # the config is found upwards; globs stay relative to it
    code, out, _ = check(capsys)
    assert findings(out) == ["b.py:ATN103"]


# ---------------------------------------------------------------------------------------------
# exclude / extend-exclude / force-exclude / respect-gitignore
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("key", ["exclude", "extend-exclude"])
def test_excluded_directory_skipped_when_walking(project, capsys, key):
    write(project.root / "gen" / "g.py", T103)
    write(project.root / "gen" / "deep" / "h.py", T103)
    project(f'[tool.attnlint]\n{key} = ["gen", "t10[12].py"]\n')
    code, out, _ = check(capsys)
    assert findings(out) == ["t103.py:ATN103"]


def test_default_excludes_still_apply_with_extend_exclude(project, capsys):
    write(project.root / ".venv" / "lib.py", T103)
    write(project.root / "gen" / "g.py", T103)
    project('[tool.attnlint]\nextend-exclude = ["gen"]\nselect = ["ATN103"]\n')
    code, out, _ = check(capsys)
    assert findings(out) == ["t103.py:ATN103"]


def test_exclude_replaces_default_excludes(project, capsys):
    write(project.root / "venv" / "lib.py", T103)
    project('[tool.attnlint]\nexclude = []\nselect = ["ATN103"]\n')
    code, out, _ = check(capsys)
    assert findings(out) == ["t103.py:ATN103", "venv/lib.py:ATN103"]


def test_explicit_file_checked_even_if_excluded(project, capsys):
    write(project.root / "gen" / "g.py", T103)
    project('[tool.attnlint]\nextend-exclude = ["gen"]\n')
    code, out, _ = check(capsys, "gen/g.py")
    assert code == 1
    assert findings(out) == ["gen/g.py:ATN103"]


def test_force_exclude_cli(project, capsys):
    write(project.root / "gen" / "g.py", T103)
    project('[tool.attnlint]\nextend-exclude = ["gen"]\n')
    code, out, _ = check(capsys, "--force-exclude", "gen/g.py")
    assert (code, out) == (0, "All checks passed!\n")


def test_force_exclude_config(project, capsys):
    write(project.root / "gen" / "g.py", T103)
    project('[tool.attnlint]\nextend-exclude = ["gen"]\nforce-exclude = true\n')
    code, out, _ = check(capsys, "gen/g.py")
    assert (code, out) == (0, "All checks passed!\n")


def _git(root: Path, *args):
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, timeout=30)


@pytest.fixture
def git_project(project):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    _git(project.root, "init", "-q")
    write(project.root / ".gitignore", "ignored/\nbuild_*.py\n")
    write(project.root / "ignored" / "i.py", T103)
    write(project.root / "build_gen.py", T103)
    return project


def test_respect_gitignore_default(git_project, capsys):
    git_project('[tool.attnlint]\nselect = ["ATN103"]\n')
    code, out, _ = check(capsys)
    assert findings(out) == ["t103.py:ATN103"]


def test_respect_gitignore_false(git_project, capsys):
    git_project('[tool.attnlint]\nselect = ["ATN103"]\nrespect-gitignore = false\n')
    code, out, _ = check(capsys)
    assert findings(out) == ["build_gen.py:ATN103", "ignored/i.py:ATN103", "t103.py:ATN103"]


def test_explicit_gitignored_file_is_checked(git_project, capsys):
    git_project('[tool.attnlint]\nselect = ["ATN103"]\n')
    code, out, _ = check(capsys, "build_gen.py")
    assert findings(out) == ["build_gen.py:ATN103"]


# ---------------------------------------------------------------------------------------------
# Fixes
# ---------------------------------------------------------------------------------------------
def test_unsafe_fixes_in_config_applies_unsafe_fix(project, capsys):
    project("[tool.attnlint]\nunsafe-fixes = true\n")
    code, out, _ = check(capsys, "--fix", "t102.py")
    assert code == 0
    assert (project.root / "t102.py").read_text(encoding="utf-8") == T102_FIXED


def test_cli_no_unsafe_fixes_overrides_config(project, capsys):
    project("[tool.attnlint]\nunsafe-fixes = true\n")
    code, out, _ = check(capsys, "--fix", "--no-unsafe-fixes", "t102.py")
    assert code == 1
    assert (project.root / "t102.py").read_text(encoding="utf-8") == T102


def test_unfixable_is_not_fixed(project, capsys):
    project('[tool.attnlint]\nunfixable = ["ATN103"]\n')
    code, out, _ = check(capsys, "--fix", "t103.py")
    assert code == 1
    assert findings(out) == ["t103.py:ATN103"]
    assert (project.root / "t103.py").read_text(encoding="utf-8") == T103


def test_fixable_limits_fixes(project, capsys):
    project('[tool.attnlint]\nfixable = ["ATN102"]\nunsafe-fixes = true\n')
    code, out, _ = check(capsys, "--fix", "t102.py", "t103.py")
    assert (project.root / "t102.py").read_text(encoding="utf-8") == T102_FIXED
    assert (project.root / "t103.py").read_text(encoding="utf-8") == T103
    assert findings(out) == ["t103.py:ATN103"]


def test_extend_safe_fixes_makes_unsafe_fix_apply(project, capsys):
    project('[tool.attnlint]\nextend-safe-fixes = ["ATN102"]\n')
    code, out, _ = check(capsys, "--fix", "t102.py")
    assert code == 0
    assert (project.root / "t102.py").read_text(encoding="utf-8") == T102_FIXED


def test_unfixable_is_not_advertised_as_fixable(project, capsys):
    project('[tool.attnlint]\nunfixable = ["ATN103"]\n')
    code, out, _ = check(capsys, "t103.py")
    assert out.splitlines()[0].startswith("t103.py:3:18: ATN103 `k.T`")  # no [*]
    assert "fixable with the --fix option" not in out


def test_extend_unsafe_fixes_reflected_in_report(project, capsys):
    project('[tool.attnlint]\nextend-unsafe-fixes = ["ATN103"]\n')
    code, out, _ = check(capsys, "t103.py")
    assert out.splitlines()[-1] == "No fixes available (1 hidden fix can be enabled with the --unsafe-fixes option)."


# ---------------------------------------------------------------------------------------------
# Errors and discovery
# ---------------------------------------------------------------------------------------------
def test_unknown_key_exits_2(project, capsys):
    cfg = project("[tool.attnlint]\nbogus = 1\n")
    code, out, err = check(capsys)
    assert code == 2
    assert out == ""
    assert err == f"attnlint: error: {cfg.resolve()}: unknown key `bogus`\n"


@pytest.mark.parametrize(
    "body,message",
    [
        ('select = "ATN103"', "`select` must be a list of strings"),
        ("unsafe-fixes = 1", "`unsafe-fixes` must be true or false"),
        ('per-file-ignores = ["x"]', "`per-file-ignores` must be a table"),
    ],
)
def test_wrong_value_types_exit_2(project, capsys, body, message):
    project(f"[tool.attnlint]\n{body}\n")
    code, out, err = check(capsys)
    assert code == 2
    assert message in err


def test_invalid_toml_with_config_option_exits_2(project, capsys):
    bad = write(project.root / "bad.toml", "[tool.attnlint\nselect = [")
    code, out, err = check(capsys, "--config", str(bad))
    assert code == 2
    assert out == ""
    assert "invalid TOML" in err


def test_invalid_discovered_pyproject_exits_2(project, capsys):
    project("[tool.attnlint]\nselect = [\"ATN103\"\n")
    code, out, err = check(capsys)
    assert code == 2
    assert "invalid TOML" in err


def test_missing_config_file_exits_2(project, capsys):
    code, out, err = check(capsys, "--config", "nope.toml")
    assert code == 2
    assert "config file not found" in err


def test_config_option_uses_that_file(project, capsys, tmp_path_factory):
    project('[tool.attnlint]\nselect = ["ATN101"]\n')  # ignored: --config wins
    other = tmp_path_factory.mktemp("elsewhere") / "pyproject.toml"
    other.write_text('[tool.attnlint]\nselect = ["ATN102"]\n', encoding="utf-8")
    code, out, _ = check(capsys, "--config", str(other))
    assert findings(out) == ["t102.py:ATN102"]


def test_config_option_bare_table(project, capsys):
    bare = write(project.root / "attnlint.toml", 'select = ["ATN103"]\n')
    code, out, _ = check(capsys, "--config", str(bare))
    assert findings(out) == ["t103.py:ATN103"]


def test_closest_pyproject_with_table_wins(project, capsys, monkeypatch):
    project('[tool.attnlint]\nselect = ["ATN101"]\n')
    sub = project.root / "sub"
    write(sub / "pyproject.toml", '[tool.attnlint]\nselect = ["ATN103"]\n')
    write(sub / "inner" / "pyproject.toml", '[project]\nname = "x"\n')  # no table: skipped
    write(sub / "inner" / "t.py", T101 + T103.replace("def attention", "def attention2"))
    monkeypatch.chdir(sub / "inner")
    assert find_config(Path.cwd()) == (sub / "pyproject.toml").resolve()
    code, out, _ = check(capsys)
    assert findings(out) == ["t.py:ATN103"]


def test_load_settings_reads_keys(tmp_path):
    cfg = write(tmp_path / "pyproject.toml", textwrap.dedent("""
        [tool.attnlint]
        select = ["ATN1"]
        ignore = ["ATN101"]
        extend-exclude = ["gen"]
        respect-gitignore = false
        unsafe-fixes = true
        unfixable = ["ATN102"]
        [tool.attnlint.per-file-ignores]
        "tests/*" = ["ATN103"]
    """))
    s = load_settings(cfg)
    assert s.select == ["ATN1"] and s.ignore == ["ATN101"]
    assert s.extend_exclude == ["gen"]
    assert s.respect_gitignore is False and s.unsafe_fixes is True
    assert s.unfixable == ["ATN102"]
    assert s.per_file_ignores == {"tests/*": ["ATN103"]}
    assert s.root == tmp_path.resolve()
    assert s.selected_codes(["ATN101", "ATN102", "ATN103"]) == ["ATN102", "ATN103"]


# ---------------------------------------------------------------------------------------------
# Per-rule options
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("table", ["batched-transpose", "ATN103"])
def test_unknown_rule_option_exits_2(project, capsys, table):
    project(f'[tool.attnlint.{table}]\nfoo = 1\n')
    code, out, err = check(capsys)
    assert code == 2
    assert out == ""
    assert "unknown option(s) for ATN103 (batched-transpose): foo" in err


def test_rule_option_table_must_be_a_table(project, capsys):
    project('[tool.attnlint]\nbatched-transpose = 1\n')
    code, out, err = check(capsys)
    assert code == 2
    assert "must be a table of options" in err


def test_load_settings_rejects_unknown_option(tmp_path):
    cfg = write(tmp_path / "pyproject.toml", "[tool.attnlint.softmax-wrong-axis]\nbar = true\n")
    if registry.by_code()["ATN102"].default_options.get("bar") is not None:  # pragma: no cover
        pytest.skip("ATN102 has a `bar` option")
    with pytest.raises(ConfigError, match="unknown option"):
        load_settings(cfg)


def test_rule_option_changes_a_result(project, capsys):
    """`[tool.attnlint.batched-transpose] replacement = "mT"` reaches the rule and changes the fix."""
    code, out, _ = check(capsys, "--fix", "t103.py")
    assert code == 0
    assert Path("t103.py").read_text(encoding="utf-8") == T103_FIXED
    write(Path("t103.py"), T103)
    project('[tool.attnlint.batched-transpose]\nreplacement = "mT"\n')
    code, out, _ = check(capsys, "--fix", "t103.py")
    assert code == 0
    assert Path("t103.py").read_text(encoding="utf-8") == T103.replace("k.T /", "k.mT /")


def test_rule_option_value_is_validated(project, capsys):
    project('[tool.attnlint.ATN103]\nreplacement = "permute"\n')
    code, out, err = check(capsys)
    assert code == 2
    assert "option `replacement` of ATN103 (batched-transpose) must be one of 'transpose', 'mT'" in err


# ---------------------------------------------------------------------------------------------
# stdin and the config
# ---------------------------------------------------------------------------------------------
def test_stdin_filename_gets_per_file_ignores(project, capsys, monkeypatch):
    import io
    import sys

    project('[tool.attnlint.per-file-ignores]\n"legacy/*" = ["ATN103"]\n')
    monkeypatch.setattr(sys, "stdin", io.StringIO(T103))
    code, out, _ = check(capsys, "-", "--stdin-filename", "legacy/x.py")
    assert (code, out) == (0, "All checks passed!\n")
    monkeypatch.setattr(sys, "stdin", io.StringIO(T103))
    code, out, _ = check(capsys, "-", "--stdin-filename", "src/x.py")
    assert findings(out) == ["src/x.py:ATN103"]


def test_stdin_filename_force_excluded(project, capsys, monkeypatch):
    import io
    import sys

    project('[tool.attnlint]\nextend-exclude = ["gen"]\n')
    monkeypatch.setattr(sys, "stdin", io.StringIO(T103))
    code, out, _ = check(capsys, "-", "--stdin-filename", "gen/x.py", "--force-exclude", "--fix")
    assert code == 0
    assert out == T103  # returned untouched


@pytest.mark.parametrize(
    "body,message",
    [
        ('[tool.attnlint]\nunfixable = ["ATN1O1"]\n', "unknown rule selector `ATN1O1`"),
        ('[tool.attnlint]\nextend-safe-fixes = ["XYZ"]\n', "unknown rule selector `XYZ`"),
        ('[tool.attnlint.per-file-ignores]\n"*.py" = "ATN"\n', "must be a table of glob = [codes]"),
        ('[tool.attnlint.per-file-ignores]\n"*.py" = ["ATN9"]\n', "unknown rule selector `ATN9`"),
    ],
)
def test_every_code_in_the_config_is_validated(project, capsys, body, message):
    project(body)
    code, out, err = check(capsys)
    assert code == 2
    assert message in err
