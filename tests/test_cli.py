"""The command line, end to end: exact output lines, exit codes and file contents.

Most tests run `attnlint.cli.main([...])` in-process (fast); a few run `python -m attnlint` in a
subprocess to prove the installed entry point behaves the same.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

import attnlint
from attnlint import cli
from attnlint.reporters import FORMATS
from attnlint.rules import registry

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "self_attention_v1.py"
SCHEMA_PATH = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"

# ATN103 only (safe fix): `k.T` at line 3, 0-based column 17 -> printed as 3:18.
T103 = (
    "def attention(q, k, v):\n"
    "    b, n, d = k.shape\n"
    "    scores = q @ k.T / d ** 0.5\n"
    "    return scores.softmax(-1) @ v\n"
)
T103_FIXED = T103.replace("k.T /", "k.transpose(-2, -1) /")
MSG103 = "`k.T` reverses all 3 axes of a batched tensor; use `.transpose(-2, -1)` to swap only the last two"
LINE103 = f"t103.py:3:18: ATN103 [*] {MSG103}"

# ATN102 only (unsafe fix): `scores.softmax(1)` at 4:12.
T102 = (
    "def forward(self, q, k, v):\n"
    "    b, n, d = q.shape\n"
    "    scores = q @ k.transpose(-2, -1) * d ** -0.5\n"
    "    return scores.softmax(1) @ v\n"
)
T102_FIXED = T102.replace("softmax(1)", "softmax(-1)")
MSG102 = (
    "softmax with dim=1 on (batch, queries, keys) scores normalises over the query axis: "
    "attention weights must sum to 1 over the keys; use dim=-1"
)

# ATN101 only (unsafe fix): the product at 5:19.
T101 = (
    "import torch\n"
    "def forward(self, x):\n"
    "    queries = self.W_q(x)\n"
    "    keys = self.W_k(x)\n"
    "    attn_scores = queries @ keys.transpose(-2, -1)\n"
    "    return torch.softmax(attn_scores, dim=-1)\n"
)
MSG101 = (
    "attention scores `queries @ keys.transpose(-2, -1)` reach softmax without a 1/sqrt(d_k) "
    "scale; the softmax saturates as the head dimension grows"
)

CLEAN = "import torch\nx = torch.randn(2, 3)\n"


def run(capsys, *argv):
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def work(tmp_path, monkeypatch):
    """A project directory with one file per rule, as the current directory."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t101.py").write_text(T101, encoding="utf-8")
    (tmp_path / "t102.py").write_text(T102, encoding="utf-8")
    (tmp_path / "t103.py").write_text(T103, encoding="utf-8")
    (tmp_path / "clean.py").write_text(CLEAN, encoding="utf-8")
    return tmp_path


def concise_lines(out: str):
    return [line for line in out.splitlines() if line.startswith("t10")]


# ---------------------------------------------------------------------------------------------
# Basic check
# ---------------------------------------------------------------------------------------------
def test_check_reports_exact_position_and_exits_1(work, capsys):
    code, out, err = run(capsys, "check", "t103.py")
    assert code == 1
    assert out == (
        f"{LINE103}\n"
        "  |\n"
        "3 |     scores = q @ k.T / d ** 0.5\n"
        "  |                  ^^^ ATN103\n"
        "  |\n"
        "  = help: Replace `.T` with `.transpose(-2, -1)`\n"
        "\n"
        "Found 1 error.\n"
        "[*] 1 fixable with the --fix option.\n"
    )
    assert err == ""


def test_example_file_position(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "v1.py").write_bytes(EXAMPLE.read_bytes())
    code, out, _ = run(capsys, "check", "--output-format", "concise", "v1.py")
    assert code == 1
    assert out.splitlines()[0].startswith("v1.py:26:33: ATN103 [*] `keys.T` reverses all 3 axes")


def test_no_subcommand_is_check(work, capsys):
    code, out, _ = run(capsys, "t103.py", "--output-format", "concise")
    assert code == 1
    assert out == f"{LINE103}\nFound 1 error.\n[*] 1 fixable with the --fix option.\n"


def test_clean_file(work, capsys):
    code, out, _ = run(capsys, "check", "clean.py")
    assert (code, out) == (0, "All checks passed!\n")


def test_default_path_is_current_directory(work, capsys):
    code, out, _ = run(capsys, "check", "--output-format", "concise")
    assert code == 1
    assert [line.split(": ")[0] + ": " + line.split(": ")[1][:6] for line in concise_lines(out)] == [
        "t101.py:5:19: ATN101",
        "t102.py:4:12: ATN102",
        "t103.py:3:18: ATN103",
    ]


def test_nonexistent_path_is_reported_and_the_rest_checked(work, capsys):
    # ruff's E902: the missing path is a finding, the other paths are still checked.
    code, out, err = run(capsys, "check", "--output-format", "concise", "nope.py", "t103.py")
    assert code == 1
    assert out.splitlines()[:2] == ["nope.py:1:1: ATN002 cannot read the file: No such file or directory", LINE103]


# ---------------------------------------------------------------------------------------------
# Fixing
# ---------------------------------------------------------------------------------------------
def test_fix_rewrites_then_second_run_is_clean(work, capsys):
    code, out, _ = run(capsys, "check", "--fix", "t103.py")
    assert code == 0
    assert out == "Found 1 error (1 fixed, 0 remaining).\n"
    assert (work / "t103.py").read_text(encoding="utf-8") == T103_FIXED
    code, out, _ = run(capsys, "check", "t103.py")
    assert (code, out) == (0, "All checks passed!\n")


def test_fix_skips_unsafe_fix(work, capsys):
    code, out, _ = run(capsys, "check", "--fix", "--output-format", "concise", "t102.py")
    assert code == 1
    assert out == (
        f"t102.py:4:12: ATN102 {MSG102}\n"
        "Found 1 error.\n"
        "No fixes available (1 hidden fix can be enabled with the --unsafe-fixes option).\n"
    )
    assert (work / "t102.py").read_text(encoding="utf-8") == T102


def test_fix_with_unsafe_fixes_applies_it(work, capsys):
    code, out, _ = run(capsys, "check", "--fix", "--unsafe-fixes", "t102.py")
    assert code == 0
    assert out == "Found 1 error (1 fixed, 0 remaining).\n"
    assert (work / "t102.py").read_text(encoding="utf-8") == T102_FIXED


def test_unsafe_fixes_marks_fix_as_applicable_without_fix(work, capsys):
    code, out, _ = run(capsys, "check", "--unsafe-fixes", "--output-format", "concise", "t102.py")
    assert code == 1
    assert out == f"t102.py:4:12: ATN102 [*] {MSG102}\nFound 1 error.\n[*] 1 fixable with the --fix option.\n"
    assert (work / "t102.py").read_text(encoding="utf-8") == T102


def test_diff_prints_unified_diff_and_writes_nothing(work, capsys):
    code, out, err = run(capsys, "check", "--diff", "t103.py")
    assert code == 1
    assert out == (
        "--- a/t103.py\n"
        "+++ b/t103.py\n"
        "@@ -1,4 +1,4 @@\n"
        " def attention(q, k, v):\n"
        "     b, n, d = k.shape\n"
        "-    scores = q @ k.T / d ** 0.5\n"
        "+    scores = q @ k.transpose(-2, -1) / d ** 0.5\n"
        "     return scores.softmax(-1) @ v\n"
    )
    assert "Would fix 1 error." in err
    assert (work / "t103.py").read_text(encoding="utf-8") == T103


def test_diff_without_changes_exits_0(work, capsys):
    code, out, _ = run(capsys, "check", "--diff", "clean.py", "t102.py")
    assert (code, out) == (0, "")


def test_exit_zero(work, capsys):
    code, out, _ = run(capsys, "check", "--exit-zero", "--output-format", "concise", "t103.py")
    assert code == 0
    assert out.splitlines()[0] == LINE103


def test_exit_non_zero_on_fix(work, capsys):
    code, out, _ = run(capsys, "check", "--fix", "--exit-non-zero-on-fix", "t103.py")
    assert code == 1
    assert out == "Found 1 error (1 fixed, 0 remaining).\n"
    assert (work / "t103.py").read_text(encoding="utf-8") == T103_FIXED
    # Nothing left to fix: exit 0 again.
    code, _, _ = run(capsys, "check", "--fix", "--exit-non-zero-on-fix", "t103.py")
    assert code == 0


def test_fix_only(work, capsys):
    code, out, _ = run(capsys, "check", "--fix-only", "t103.py", "t102.py")
    # ruff: --fix-only does not report, nor exit non-zero for, what remains (ATN102 is unsafe).
    assert (code, out) == (0, "Fixed 1 error.\n")
    assert (work / "t103.py").read_text(encoding="utf-8") == T103_FIXED
    assert (work / "t102.py").read_text(encoding="utf-8") == T102
    code, out, _ = run(capsys, "check", "--fix-only", "t103.py", "t102.py")
    assert (code, out) == (0, "No errors fixed.\n")


def test_show_fixes(work, capsys):
    code, out, _ = run(capsys, "check", "--fix", "--show-fixes", "t103.py")
    assert code == 0
    assert out == (
        "Fixed 1 error:\n"
        "- t103.py:\n"
        "    1 × ATN103 (batched-transpose)\n"
        "\n"
        "Found 1 error (1 fixed, 0 remaining).\n"
    )


# ---------------------------------------------------------------------------------------------
# Selection
# ---------------------------------------------------------------------------------------------
ALL_FILES = ("t101.py", "t102.py", "t103.py")


def codes_reported(out: str):
    return [line.split(": ")[1].split()[0] for line in concise_lines(out)]


@pytest.mark.parametrize(
    "args,expected",
    [
        ([], ["ATN101", "ATN102", "ATN103"]),
        (["--select", "ATN103"], ["ATN103"]),
        (["--select", "ATN10"], ["ATN101", "ATN102", "ATN103"]),
        (["--select", "ALL"], ["ATN101", "ATN102", "ATN103"]),
        (["--select", "ALL", "--ignore", "ATN103"], ["ATN101", "ATN102"]),
        (["--select", "ATN101,ATN103"], ["ATN101", "ATN103"]),
        (["--select", "ATN101", "--extend-select", "ATN102"], ["ATN101", "ATN102"]),
        (["--ignore", "ATN10"], []),
        (["--extend-select", "ALL", "--ignore", "ATN1"], []),
    ],
)
def test_select_ignore(work, capsys, args, expected):
    code, out, _ = run(capsys, "check", "--output-format", "concise", *args, *ALL_FILES)
    assert codes_reported(out) == expected
    assert code == (1 if expected else 0)


@pytest.mark.parametrize(
    "args,expected",
    [
        (["--ignore", "ATN101", "--ignore", "ATN102"], ["ATN103"]),
        (["--select", "ATN101", "--select", "ATN103"], ["ATN101", "ATN103"]),
    ],
)
def test_repeated_selector_options_accumulate(work, capsys, args, expected):
    code, out, _ = run(capsys, "check", "--output-format", "concise", *args, *ALL_FILES)
    assert codes_reported(out) == expected


@pytest.mark.parametrize("option", ["--select", "--ignore", "--extend-select"])
def test_unknown_selector_exits_2(work, capsys, option):
    code, out, err = run(capsys, "check", option, "ATN999", "t103.py")
    assert code == 2
    assert out == ""
    assert "attnlint: error: unknown rule selector `ATN999`" in err


# ---------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------
def test_statistics(work, capsys):
    (work / "t103b.py").write_text(T103, encoding="utf-8")
    code, out, _ = run(capsys, "check", "--statistics", *ALL_FILES, "t103b.py")
    assert code == 1
    assert out == (
        "2\tATN103\t[*] batched-transpose\n"
        "1\tATN101\t[ ] missing-attention-scale\n"
        "1\tATN102\t[ ] softmax-wrong-axis\n"
        "Found 4 errors.\n"
        "[*] 2 fixable with the --fix option (2 hidden fixes can be enabled with the --unsafe-fixes option).\n"
    )


def test_statistics_with_unsupported_format_exits_2(work, capsys):
    code, _, err = run(capsys, "check", "--statistics", "--output-format", "sarif", "t103.py")
    assert code == 2
    assert "--statistics is not supported" in err


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_output_format_parses(work, capsys, fmt):
    code, out, err = run(capsys, "check", "--output-format", fmt, "t103.py", "clean.py")
    if fmt == "github-review":  # a review is of a change: without --diff-base it is a usage error
        assert code == 2
        assert "github-review needs --diff-base" in err
        return
    assert code == 1
    if fmt in ("full", "concise"):
        assert out.splitlines()[0] == LINE103
        assert "Found 1 error." in out
    elif fmt == "json":
        data = json.loads(out)
        assert len(data) == 1
        d = data[0]
        assert (d["code"], d["name"], d["filename"]) == ("ATN103", "batched-transpose", "t103.py")
        assert d["location"] == {"row": 3, "column": 18}
        assert d["end_location"] == {"row": 3, "column": 21}
        assert d["fix"]["applicability"] == "safe"
        assert d["fix"]["edits"] == [
            {"content": "k.transpose(-2, -1)", "location": {"row": 3, "column": 18},
             "end_location": {"row": 3, "column": 21}}
        ]
        assert d["noqa_row"] == 3
        assert d["message"] == MSG103
    elif fmt == "json-lines":
        rows = [json.loads(line) for line in out.splitlines() if line.strip()]
        assert [(r["code"], r["location"]["row"], r["location"]["column"]) for r in rows] == [("ATN103", 3, 18)]
    elif fmt == "github":
        assert out.splitlines()[0] == (
            "::error title=attnlint (ATN103),file=t103.py,line=3,col=18,endLine=3,endColumn=21::"
            f"ATN103 {MSG103}"
        )
        assert LINE103 in out.splitlines()  # the full report follows the annotations
    elif fmt == "sarif":
        data = json.loads(out)
        schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
        jsonschema.Draft4Validator(schema).validate(data)
        (result,) = data["runs"][0]["results"]
        assert result["ruleId"] == "ATN103"
        region = result["locations"][0]["physicalLocation"]["region"]
        assert (region["startLine"], region["startColumn"], region["endColumn"]) == (3, 18, 21)
        assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "t103.py"
    elif fmt == "rdjson":
        data = json.loads(out)
        (diag,) = data["diagnostics"]
        assert diag["code"]["value"] == "ATN103"
        assert diag["location"]["path"] == "t103.py"
        assert diag["location"]["range"]["start"] == {"line": 3, "column": 18}
    elif fmt == "gitlab":
        data = json.loads(out)
        (issue,) = data
        assert issue["check_name"] == "ATN103"
        assert issue["location"]["path"] == "t103.py"
        assert issue["location"]["lines"]["begin"] == 3
    elif fmt == "grouped":
        assert out.splitlines()[:3] == ["t103.py:", f"  3:18 ATN103 [*] {MSG103}", ""]
        assert "Found 1 error." in out
    elif fmt == "pylint":
        assert out == f"t103.py:3: [ATN103] {MSG103}\n"
    elif fmt == "azure":
        assert out == (
            "##vso[task.logissue type=error;sourcepath=t103.py;linenumber=3;columnnumber=18;code=ATN103;]"
            f"{MSG103}\n"
        )
    elif fmt == "junit":
        assert '<testsuite name="t103.py" tests="1" disabled="0" errors="0" failures="1" package="org.attnlint">' in out
        assert '<testcase name="org.attnlint.ATN103" classname="t103" line="3" column="18">' in out
    else:  # pragma: no cover - a new format needs a case here
        pytest.fail(f"no test for output format {fmt}")


def test_sarif_with_no_findings_is_valid(work, capsys):
    code, out, _ = run(capsys, "check", "--output-format", "sarif", "clean.py")
    assert code == 0
    data = json.loads(out)
    jsonschema.Draft4Validator(json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))).validate(data)
    assert data["runs"][0]["results"] == []


def test_output_file(work, capsys):
    code, out, _ = run(capsys, "check", "--output-format", "json", "-o", "report.json", "t103.py")
    assert code == 1
    assert out == ""
    data = json.loads((work / "report.json").read_text(encoding="utf-8"))
    assert [(d["code"], d["filename"]) for d in data] == [("ATN103", "t103.py")]


# ---------------------------------------------------------------------------------------------
# stdin
# ---------------------------------------------------------------------------------------------
def test_stdin_with_filename(work, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(T103))
    code, out, _ = run(capsys, "check", "-", "--stdin-filename", "x.py", "--output-format", "concise")
    assert code == 1
    assert out == f"x.py:3:18: ATN103 [*] {MSG103}\nFound 1 error.\n[*] 1 fixable with the --fix option.\n"


def test_stdin_fix_prints_fixed_source(work, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(T103))
    code, out, _ = run(capsys, "check", "-", "--stdin-filename", "x.py", "--fix")
    assert code == 0
    assert out == T103_FIXED


def test_stdin_fix_leaves_unsafe_and_reports_on_stderr(work, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(T102))
    code, out, err = run(capsys, "check", "-", "--stdin-filename", "y.py", "--fix")
    assert code == 1
    assert out == T102
    assert f"y.py:4:12: ATN102 {MSG102}" in err


def test_stdin_subprocess():
    proc = subprocess.run(
        [sys.executable, "-m", "attnlint", "check", "-", "--stdin-filename", "x.py", "--fix"],
        input=T103, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == T103_FIXED


# ---------------------------------------------------------------------------------------------
# --add-noqa
# ---------------------------------------------------------------------------------------------
def test_add_noqa_then_check_passes(work, capsys):
    code, out, _ = run(capsys, "check", "--add-noqa", "t103.py")
    assert (code, out) == (0, "Added 1 noqa directive.\n")
    assert (work / "t103.py").read_text(encoding="utf-8") == T103.replace(
        "k.T / d ** 0.5\n", "k.T / d ** 0.5  # noqa: ATN103\n"
    )
    code, out, _ = run(capsys, "check", "t103.py")
    assert (code, out) == (0, "All checks passed!\n")


def test_add_noqa_after_backslash_continuation_keeps_file_valid(work, capsys):
    source = (
        "def f(q, k):\n"
        "    b, n, d = k.shape\n"
        "    s = q @ k.T + \\\n"
        "        1\n"
        "    return s\n"
    )
    (work / "bs.py").write_text(source, encoding="utf-8")
    run(capsys, "check", "--add-noqa", "bs.py")
    compile((work / "bs.py").read_text(encoding="utf-8"), "bs.py", "exec")  # must still parse
    code, out, _ = run(capsys, "check", "bs.py")
    assert (code, out) == (0, "All checks passed!\n")


def test_add_noqa_on_line_opening_multiline_string(work, capsys):
    source = (
        "def f(q, k):\n"
        "    b, n, d = k.shape\n"
        '    s = (q @ k.T, """\n'
        'text""")\n'
        "    return s\n"
    )
    (work / "ms.py").write_text(source, encoding="utf-8")
    run(capsys, "check", "--add-noqa", "ms.py")
    new = (work / "ms.py").read_text(encoding="utf-8")
    # The string's value must not change.
    assert '"""\ntext"""' in new
    code, out, _ = run(capsys, "check", "ms.py")
    assert (code, out) == (0, "All checks passed!\n")


# ---------------------------------------------------------------------------------------------
# rules / rule
# ---------------------------------------------------------------------------------------------
def test_rules_lists_codes_with_safety(capsys):
    code, out, _ = run(capsys, "rules")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["code", "name", "fix", "summary"]
    rows = {line.split()[0]: line.split()[1:4] for line in lines[1:]}
    # Every rule is listed with its fix availability and safety.
    assert rows["ATN101"] == ["missing-attention-scale", "sometimes", "(unsafe)"]
    assert rows["ATN102"] == ["softmax-wrong-axis", "sometimes", "(unsafe)"]
    assert rows["ATN103"] == ["batched-transpose", "always", "(safe)"]
    assert rows["ATN204"] == ["unsliced-causal-mask", "sometimes", "(safe)"]
    # Exactly the registered rules (the registry is the one list; no count is kept here).
    from attnlint.rules import registry

    assert sorted(rows) == [r.code for r in registry.all_rules()]
    codes = [line.split()[0] for line in lines[1:]]
    assert codes == sorted(codes)


def test_rules_json(capsys):
    code, out, _ = run(capsys, "rules", "--output-format", "json")
    assert code == 0
    data = json.loads(out)
    by_code = {r["code"]: r for r in data}
    assert [(c, by_code[c]["fix_applicability"]) for c in ("ATN101", "ATN102", "ATN103")] == [
        ("ATN101", "unsafe"), ("ATN102", "unsafe"), ("ATN103", "safe"),
    ]
    assert by_code["ATN103"]["name"] == "batched-transpose"
    assert [r["code"] for r in data] == sorted(by_code)


def test_rule_page(capsys):
    code, out, _ = run(capsys, "rule", "ATN103")
    assert code == 0
    assert out.splitlines()[0] == "# batched-transpose (ATN103)"
    assert "Fix is always available." in out
    headings = [line for line in out.splitlines() if line.startswith("## ")]
    for section in ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety"):
        assert f"## {section}" in headings
    order = [headings.index(f"## {s}") for s in ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety")]
    assert order == sorted(order)
    # The page's example is ATN103's flagged invalid example, and its fix.
    example = registry.lookup("ATN103").page_example()
    assert example.source.rstrip() in out and example.fixed_source.rstrip() in out


def test_rule_by_name(capsys):
    code, out, _ = run(capsys, "rule", "batched-transpose")
    assert code == 0
    assert out.splitlines()[0] == "# batched-transpose (ATN103)"


def test_rule_page_json(capsys):
    code, out, _ = run(capsys, "rule", "ATN103", "--output-format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["code"] == "ATN103"
    assert data["name"] == "batched-transpose"
    assert data["fix_availability"] == "always"
    assert data["fix_applicability"] == "safe"
    assert data["url"] == "https://github.com/attnlint/attnlint/blob/main/docs/rules/batched-transpose.md"
    assert "## Fix safety" in data["explanation"]


def test_rule_all_json(capsys):
    code, out, _ = run(capsys, "rule", "--all", "--output-format", "json")
    assert code == 0
    codes = [r["code"] for r in json.loads(out)]
    assert codes == [r.code for r in registry.all_rules()]
    assert {"ATN101", "ATN102", "ATN103"} <= set(codes)


def test_unknown_rule_exits_2(capsys):
    code, out, err = run(capsys, "rule", "NOPE")
    assert code == 2
    assert out == ""
    assert err == "attnlint: error: unknown rule `NOPE`; see `attnlint rules`\n"


def test_bad_option_exits_2(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["check", "--output-format", "nope", "x.py"])
    assert info.value.code == 2
    assert "attnlint: error:" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# The installed entry point
# ---------------------------------------------------------------------------------------------
def test_version_subprocess():
    proc = subprocess.run([sys.executable, "-m", "attnlint", "--version"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert proc.stdout == f"attnlint {attnlint.__version__}\n"


def test_check_subprocess(work):
    proc = subprocess.run(
        [sys.executable, "-m", "attnlint", "t103.py", "--output-format", "concise"],
        capture_output=True, text=True, timeout=60, cwd=work,
    )
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[0] == LINE103


def test_nonexistent_path_subprocess(work):
    proc = subprocess.run([sys.executable, "-m", "attnlint", "check", "missing.py"],
                          capture_output=True, text=True, timeout=60, cwd=work)
    assert proc.returncode == 1
    assert "missing.py:1:1: ATN002" in proc.stdout
