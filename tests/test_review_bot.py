"""`--diff-base` and the `github-review` payload, on real git repositories built in a temp dir.

The history: an old commit with old bugs; a new commit that adds one bug next to them, renames a
file, deletes another and changes one argument of a multi-line call. Only what the new commit
introduced may be reported, and a review's suggestions, applied as GitHub applies them, must leave
the file clean.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
from gitutil import git

from attnlint import cli
from attnlint.changes import FileChanges, changes_since, parse_diff
from attnlint.diagnostics import Applicability, Diagnostic, Edit, FileResult, Fix, Position
from attnlint.reporters.github_review import MAX_COMMENTS, build_review

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


MSG103 = "`k.T` reverses all 4 axes of a batched tensor; use `.transpose(-2, -1)` to swap only the last two"
URL103 = "https://github.com/attnlint/attnlint/blob/main/docs/rules/batched-transpose.md"

# Old bugs: ATN103 in `old_bug`, a second one in the file that gets renamed, one in the file that
# gets deleted. The softmax is right (dim=-1) until the new commit.
MODEL_OLD = """\
import torch


def old_bug(q, k):
    # q, k: (batch, heads, seq, dim)
    return q @ k.T


def weights(q, k):
    # q, k: (batch, seq, dim)
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    return torch.softmax(
        scores,
        dim=-1,
    )
"""
# New: one bug added right next to the old one, and the softmax axis changed on line 15 only.
MODEL_NEW = """\
import torch


def old_bug(q, k):
    # q, k: (batch, heads, seq, dim)
    return q @ k.T


def new_bug(q, k):
    # q, k: (batch, heads, seq, dim)
    return q @ k.T


def weights(q, k):
    # q, k: (batch, seq, dim)
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    return torch.softmax(
        scores,
        dim=1,
    )
"""
OTHER = """\
def other(q, k):
    # q, k: (batch, heads, seq, dim)
    return q @ k.T
"""


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("GITHUB_BASE_REF", raising=False)
    monkeypatch.delenv("ATTNLINT_OUTPUT_FORMAT", raising=False)
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    write(root / "src" / "model.py", MODEL_OLD)
    write(root / "src" / "old_name.py", OTHER)
    write(root / "src" / "doomed.py", OTHER)
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "old")
    write(root / "src" / "model.py", MODEL_NEW)
    git(root, "mv", "src/old_name.py", "src/new_name.py")
    git(root, "rm", "-q", "src/doomed.py")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "new")
    monkeypatch.chdir(root)
    return root


def check(capsys, *args: str) -> Tuple[int, str, str]:
    code = cli.main(["check", "--no-cache", *args])
    out, err = capsys.readouterr()
    return code, out, err


def findings(capsys, *args: str) -> List[Tuple[str, str, int]]:
    code, out, err = check(capsys, "--output-format", "json", *args)
    assert code in (0, 1), err
    return [(d["filename"], d["code"], d["location"]["row"]) for d in json.loads(out)]


# ---------------------------------------------------------------------------------------------
# Which findings a change introduced
# ---------------------------------------------------------------------------------------------
def test_only_the_new_findings(repo, capsys):
    # Without --diff-base every old bug is reported too.
    assert findings(capsys) == [
        ("src/model.py", "ATN103", 6),
        ("src/model.py", "ATN103", 11),
        ("src/model.py", "ATN102", 17),
        ("src/new_name.py", "ATN103", 3),
    ]
    # The new bug, and the softmax whose statement (lines 17-20) holds the changed line 19; not the
    # old bug two lines above the new one, nor the renamed file's, nor the deleted file's.
    assert findings(capsys, "--diff-base", "HEAD~1") == [("src/model.py", "ATN103", 11), ("src/model.py", "ATN102", 17)]


def test_from_a_subdirectory(repo, capsys, monkeypatch):
    monkeypatch.chdir(repo / "src")
    assert findings(capsys, "--diff-base", "HEAD~1") == [("model.py", "ATN103", 11), ("model.py", "ATN102", 17)]
    # The review names files relative to the repository root, as GitHub does.
    code, out, _ = check(capsys, "--diff-base", "HEAD~1", "--output-format", "github-review")
    assert code == 1
    assert {c["path"] for c in json.loads(out)["comments"]} == {"src/model.py"}


def test_renamed_file_with_an_edit_reports_only_the_edit(repo, capsys):
    added = "\n\ndef more(q, k):\n    # q, k: (batch, heads, seq, dim)\n    return q @ k.T\n"
    git(repo, "mv", "src/model.py", "src/attention.py")
    write(repo / "src" / "attention.py", MODEL_NEW + added)
    git(repo, "commit", "-q", "-am", "rename and edit")
    assert "rename from src/model.py" in git(repo, "show", "-M", "HEAD")
    assert findings(capsys, "--diff-base", "HEAD~1") == [("src/attention.py", "ATN103", 25)]


def test_uncommitted_and_untracked_changes_count(repo, capsys):
    # The working tree is what is checked: an untracked file is new, every line of it.
    write(repo / "src" / "fresh.py", OTHER)
    assert findings(capsys, "--diff-base", "HEAD") == [("src/fresh.py", "ATN103", 3)]
    # An ignored file is not part of the change.
    write(repo / ".gitignore", "src/fresh.py\n")
    assert findings(capsys, "--diff-base", "HEAD") == []


def test_nothing_changed_is_clean(repo, capsys):
    code, out, _ = check(capsys, "--diff-base", "HEAD")
    assert (code, out) == (0, "All checks passed!\n")


def test_auto_is_the_merge_base_with_the_target_branch(repo, capsys, monkeypatch):
    git(repo, "checkout", "-q", "-b", "feature", "HEAD~1")
    write(repo / "src" / "feature.py", OTHER)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "feature")
    # main moved on after the branch point (the `new` commit): its findings are not the branch's.
    assert findings(capsys, "--diff-base", "auto") == [("src/feature.py", "ATN103", 3)]
    # In GitHub Actions the target branch is named by GITHUB_BASE_REF.
    git(repo, "branch", "-q", "release", "HEAD")
    monkeypatch.setenv("GITHUB_BASE_REF", "release")
    assert findings(capsys, "--diff-base", "auto") == []


@pytest.mark.parametrize(
    "args, message",
    [
        (["--diff-base", "no-such-rev"], "--diff-base no-such-rev: no such commit"),
        (["--diff-base", "HEAD~1", "--fix"], "cannot be combined with --fix"),
        (["--diff-base", "HEAD~1", "-"], "not stdin"),
    ],
)
def test_usage_errors(repo, capsys, args, message):
    code, out, err = check(capsys, *args)
    assert code == 2
    assert message in err


def test_not_a_git_tree_is_a_clear_error(tmp_path, capsys, monkeypatch):
    write(tmp_path / "plain" / "m.py", OTHER)
    monkeypatch.chdir(tmp_path / "plain")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    code, out, err = check(capsys, "--diff-base", "HEAD")
    assert code == 2
    assert out == ""
    assert "--diff-base needs a git repository" in err


def test_diff_parsing_counts_hunk_lines():
    # An added line that reads "++ x" is printed "+++ x": content, not a file header.
    patch = (
        b"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,3 @@\n x = 1\n+++ y\n-z\n+w\n"
        b'diff --git "a/sp ace\\303\\251.py" "b/sp ace\\303\\251.py"\nnew file mode 100644\n--- /dev/null\n'
        b'+++ "b/sp ace\\303\\251.py"\t\n@@ -0,0 +1 @@\n+x\n'
        b"diff --git a/gone.py b/gone.py\ndeleted file mode 100644\n--- a/gone.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
    )
    assert list(parse_diff(patch)) == [
        ("a.py", [2, 3], [(1, 3)], False),
        ("sp aceé.py", [1], [(1, 1)], True),
    ]


def test_odd_file_names(repo, capsys):
    write(repo / "src" / "sp ace é.py", OTHER)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "odd name")
    changes = changes_since("HEAD~1")
    (only,) = changes.files.values()
    assert only.repo_path == "src/sp ace é.py"
    assert findings(capsys, "--diff-base", "HEAD~1") == [("src/sp ace é.py", "ATN103", 3)]


# ---------------------------------------------------------------------------------------------
# The review payload
# ---------------------------------------------------------------------------------------------
def review(capsys, *args: str) -> Dict:
    code, out, err = check(capsys, "--diff-base", "HEAD~1", "--output-format", "github-review", *args)
    assert code == 1, err
    return json.loads(out)


def test_review_payload_field_by_field(repo, capsys):
    data = review(capsys)
    assert set(data) == {"event", "body", "comments"}
    assert data["event"] == "COMMENT"
    assert data["body"] == (
        "**attnlint** found 2 problems in the lines this change adds. "
        "1 comment with a suggested fix (commit it from the comment)."
    )
    new_bug, softmax = data["comments"]
    # The safe fix: a one-line suggestion replacing exactly line 11.
    assert new_bug == {
        "path": "src/model.py",
        "line": 11,
        "side": "RIGHT",
        "body": (
            f"**ATN103** [batched-transpose]({URL103}): {MSG103}\n\n"
            "Safe fix: Replace `.T` with `.transpose(-2, -1)`.\n\n"
            "```suggestion\n"
            "    return q @ k.transpose(-2, -1)\n"
            "```"
        ),
    }
    # The unsafe fix is not suggested by default; the comment covers the whole call (17-20).
    assert {k: softmax[k] for k in ("path", "start_line", "start_side", "line", "side")} == {
        "path": "src/model.py",
        "start_line": 17,
        "start_side": "RIGHT",
        "line": 20,
        "side": "RIGHT",
    }
    assert "```suggestion" not in softmax["body"]
    assert softmax["body"].startswith("**ATN102** [softmax-wrong-axis](")
    assert "An unsafe fix is available" in softmax["body"]


def test_unsafe_suggestions_are_labelled(repo, capsys):
    _, softmax = review(capsys, "--unsafe-fixes")["comments"]
    assert (softmax["start_line"], softmax["line"]) == (17, 20)
    body = softmax["body"]
    assert "**Unsafe fix** (ATN102)" in body
    assert "It can change what this code computes" in body
    # It replaces the finding's four lines, with the axis fixed.
    assert body.endswith("```suggestion\n    return torch.softmax(\n        scores,\n        dim=-1,\n    )\n```")


def apply_suggestions(text: str, comments: List[Dict]) -> str:
    """What "Commit suggestion" does: replace lines start_line..line with the block's lines."""
    lines = text.splitlines(keepends=True)
    for comment in sorted(comments, key=lambda c: c["line"], reverse=True):
        body = comment["body"]
        if "```suggestion\n" not in body:
            continue
        block = body.split("```suggestion\n", 1)[1].rsplit("```", 1)[0]
        first = comment.get("start_line", comment["line"])
        lines[first - 1 : comment["line"]] = block.splitlines(keepends=True)
    return "".join(lines)


@pytest.mark.parametrize("unsafe", [False, True])
def test_suggestions_applied_leave_the_file_clean(repo, capsys, unsafe):
    extra = ["--unsafe-fixes"] if unsafe else []
    comments = review(capsys, *extra)["comments"]
    path = repo / "src" / "model.py"
    path.write_text(apply_suggestions(path.read_text(encoding="utf-8"), comments), encoding="utf-8")
    remaining = findings(capsys, "--diff-base", "HEAD~1")
    # Safe suggestions fix the new transpose; the unsafe axis fix only when it was suggested.
    assert remaining == ([] if unsafe else [("src/model.py", "ATN102", 17)])
    # The rest of the file is untouched: the old bug is still there.
    assert ("src/model.py", "ATN103", 6) in findings(capsys)


def test_overlapping_fixes_become_one_suggestion(repo, capsys):
    write(
        repo / "src" / "model.py",
        MODEL_NEW + "\n\ndef twice(q, k):\n    # q, k: (batch, heads, seq, dim)\n    return q @ k.T + q @ k.T\n",
    )
    git(repo, "commit", "-q", "-am", "twice")
    code, out, _ = check(capsys, "--diff-base", "HEAD~1", "--output-format", "github-review")
    first, second = json.loads(out)["comments"]
    assert first["line"] == second["line"] == 25
    assert first["body"].endswith("```suggestion\n    return q @ k.transpose(-2, -1) + q @ k.transpose(-2, -1)\n```")
    assert "also fixes 1 overlapping finding (ATN103)" in first["body"]
    assert "```suggestion" not in second["body"]
    assert "The suggestion on line 25 fixes this too." in second["body"]
    path = repo / "src" / "model.py"
    path.write_text(apply_suggestions(path.read_text(encoding="utf-8"), [first, second]), encoding="utf-8")
    assert findings(capsys, "--diff-base", "HEAD~1") == []


def test_multi_line_finding_gets_a_multi_line_suggestion(repo, capsys):
    write(
        repo / "src" / "split.py",
        "def f(q, k):\n    # q, k: (batch, heads, seq, dim)\n    return q @ (k\n        ).T\n",
    )
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "split")
    code, out, _ = check(capsys, "--diff-base", "HEAD~1", "--output-format", "github-review")
    (comment,) = json.loads(out)["comments"]
    assert (comment["start_line"], comment["line"], comment["start_side"]) == (3, 4, "RIGHT")
    path = repo / "src" / "split.py"
    path.write_text(apply_suggestions(path.read_text(encoding="utf-8"), [comment]), encoding="utf-8")
    assert findings(capsys, "--diff-base", "HEAD~1") == []


# ---------------------------------------------------------------------------------------------
# Staying inside the diff, and the cap (the reporter alone, on a hand-made change)
# ---------------------------------------------------------------------------------------------
SOURCE = "import torch\nx = 1\ny = 2\nw = q @ k.T\nz = 3\n"


def t_diag(line: int, edits=None, applicability=Applicability.SAFE, code="ATN103") -> Diagnostic:
    edits = edits or (Edit(Position(line, 8), Position(line, 11), "k.mT"),)
    return Diagnostic(
        code=code,
        name="batched-transpose",
        message="m",
        path="m.py",
        start=Position(line, 8),
        end=Position(line, 11),
        fix=Fix("Use .mT", applicability, tuple(edits)),
        noqa_row=line,
    )


def scope(added, hunks) -> Dict[str, FileChanges]:
    return {"m.py": FileChanges(Path("/x/m.py"), "pkg/m.py", frozenset(added), tuple(hunks))}


def test_a_fix_reaching_outside_the_diff_is_not_suggested():
    # The fix also edits line 1, which the diff (lines 3-5) does not show.
    far = t_diag(
        4, edits=(Edit(Position(1, 0), Position(1, 0), "# fixed\n"), Edit(Position(4, 8), Position(4, 11), "k.mT"))
    )
    data = build_review([FileResult("m.py", [far], source=SOURCE)], scope({4}, [(3, 5)]))
    (comment,) = data["comments"]
    assert (comment["path"], comment["line"]) == ("pkg/m.py", 4)
    assert "start_line" not in comment
    assert "```suggestion" not in comment["body"]
    assert "cannot be suggested on the lines this change shows" in comment["body"]


def test_a_finding_that_cannot_be_placed_goes_to_the_summary():
    # A file-level finding on line 1, outside the only hunk.
    diag = Diagnostic("ATN001", "syntax-error", "bad", "m.py", Position(1, 0), Position(1, 0), noqa_row=1)
    data = build_review([FileResult("m.py", [diag], source=SOURCE)], scope({4}, [(4, 4)]))
    assert data["comments"] == []
    assert "Not on a line this review can comment on:" in data["body"]
    assert "- `pkg/m.py:1:1` **ATN001** bad" in data["body"]


def test_comments_are_capped_and_the_rest_summarised():
    source = "".join(f"w{i} = q @ k.T\n" for i in range(MAX_COMMENTS + 3))
    diags = [
        Diagnostic("ATN103", "batched-transpose", "m", "m.py", Position(i, 10), Position(i, 13), noqa_row=i)
        for i in range(1, MAX_COMMENTS + 4)
    ]
    n = MAX_COMMENTS + 3
    data = build_review([FileResult("m.py", diags, source=source)], scope(range(1, n + 1), [(1, n)]))
    assert len(data["comments"]) == MAX_COMMENTS
    assert f"found {n} problems" in data["body"]
    assert f"Only the first {MAX_COMMENTS} are comments; the other 3:" in data["body"]
    assert f"- `pkg/m.py:{n}:11` **ATN103** m" in data["body"]


def test_every_comment_is_inside_a_hunk(repo, capsys):
    changes = changes_since("HEAD~1")
    hunks = {fc.repo_path: fc.hunks for fc in changes.files.values()}
    for extra in ([], ["--unsafe-fixes"]):
        for comment in review(capsys, *extra)["comments"]:
            first = comment.get("start_line", comment["line"])
            assert any(lo <= first and comment["line"] <= hi for lo, hi in hunks[comment["path"]]), comment


def test_suggestion_fence_outlasts_backticks_in_the_code():
    src = "w = q @ k.T  # ```\n"
    diag = Diagnostic(
        "ATN103",
        "batched-transpose",
        "m",
        "m.py",
        Position(1, 8),
        Position(1, 11),
        fix=Fix("f", Applicability.SAFE, (Edit(Position(1, 8), Position(1, 11), "k.mT"),)),
        noqa_row=1,
    )
    (comment,) = build_review([FileResult("m.py", [diag], source=src)], scope({1}, [(1, 1)]))["comments"]
    assert comment["body"].endswith("````suggestion\nw = q @ k.mT  # ```\n````")


# ---------------------------------------------------------------------------------------------
# SARIF: fingerprints that survive unrelated edits, and a valid document
# ---------------------------------------------------------------------------------------------
def sarif_fingerprints(source: str) -> List[str]:
    from attnlint import engine, reporters
    from attnlint.config import Settings

    result = engine.check_source(source, "m.py", Settings())
    data = json.loads(reporters.render("sarif", [result]))
    import jsonschema

    schema = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(schema).validate(data)
    return [r["partialFingerprints"]["primaryLocationLineHash"] for r in data["runs"][0]["results"]]


def test_sarif_fingerprints_are_stable_across_unrelated_edits():
    base = sarif_fingerprints(MODEL_NEW)
    assert len(base) == 3 and len(set(base)) == 3
    # Lines added above, a blank line inside the function, the call reformatted onto one line.
    moved = MODEL_NEW.replace("import torch\n", "import math\nimport torch\n\nSCALE = 2\n", 1)
    moved = moved.replace("def new_bug(q, k):\n", "def new_bug(q, k):\n\n")
    moved = moved.replace("torch.softmax(\n        scores,\n        dim=1,\n    )", "torch.softmax( scores, dim=1, )")
    assert sarif_fingerprints(moved) == base
    # The same statement in another function is another alert; so is a changed statement.
    renamed = MODEL_NEW.replace("def new_bug(", "def newer_bug(")
    assert sarif_fingerprints(renamed)[0] == base[0] and sarif_fingerprints(renamed)[1] != base[1]
    changed = MODEL_NEW.replace("    return q @ k.T\n\n\ndef weights", "    return 2 * q @ k.T\n\n\ndef weights")
    assert sarif_fingerprints(changed)[1] != base[1]


def test_sarif_identical_statements_stay_distinct():
    twice = "def f(q, k):\n    # q, k: (batch, heads, seq, dim)\n    a = q @ k.T\n    a = q @ k.T\n"
    first, second = sarif_fingerprints(twice)
    assert first.split(":")[0] == second.split(":")[0]
    assert (first.split(":")[1], second.split(":")[1]) == ("1", "2")


def test_sarif_help_uri_is_the_rule_page():
    from attnlint import reporters

    data = json.loads(reporters.render("sarif", []))
    for rule in data["runs"][0]["tool"]["driver"]["rules"]:
        assert rule["helpUri"] == f"https://github.com/attnlint/attnlint/blob/main/docs/rules/{rule['name']}.md"
        assert (Path(__file__).resolve().parents[1] / "docs" / "rules" / f"{rule['name']}.md").is_file()


def test_the_repository_is_the_checked_paths(repo, capsys, monkeypatch, tmp_path):
    # Run from outside the repository, naming a directory inside it.
    monkeypatch.chdir(tmp_path)
    assert findings(capsys, "--diff-base", "HEAD~1", str(repo / "src")) == [
        ("repo/src/model.py", "ATN103", 11),
        ("repo/src/model.py", "ATN102", 17),
    ]


def test_a_long_statement_changed_at_its_end_is_commented_on_the_changed_line():
    # The finding is on line 1 of a 12-line call; only line 12 changed, and the diff shows 9-12.
    source = "w = f(q @ k.T,\n" + "".join(f"      a{i},\n" for i in range(10)) + "      b)\n"
    diag = Diagnostic("ATN103", "batched-transpose", "m", "m.py", Position(1, 10), Position(1, 13), noqa_row=1)
    (comment,) = build_review([FileResult("m.py", [diag], source=source)], scope({12}, [(9, 12)]))["comments"]
    assert (comment["line"], "start_line" in comment) == (12, False)
