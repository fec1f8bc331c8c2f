"""`github-review`: the JSON body of GitHub's "create a review for a pull request" call.

    {"event": "COMMENT", "body": summary,
     "comments": [{"path", "line", "side": "RIGHT", "start_line", "start_side", "body"}]}

One comment per finding, placed on lines the pull request's diff shows: GitHub rejects the whole
review when a single comment points elsewhere, so a finding that cannot be placed goes to the
summary instead. A comment's body holds the message, a link to the rule page, and, for a fix that
may be applied, a ```suggestion block that replaces exactly the lines the comment covers (from
`start_line` to `line`): the reviewer's one-click "Commit suggestion" then makes the fix.

Safe fixes are suggested always; unsafe ones only with --unsafe-fixes, and then the body says that
the fix is unsafe and why. Overlapping suggestions cannot both be committed, so fixes whose lines
overlap are suggested together, on the first comment. Comments are capped (MAX_COMMENTS); the rest
are listed in the summary.

The payload needs the change: `--diff-base` gives each file's changed lines and diff hunks.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from attnlint.changes import FileChanges
from attnlint.diagnostics import Applicability, Diagnostic, FileResult
from attnlint.reporters.common import TOOL_NAME, diagnostic_url, on_disk, one_based, plural, rule_name
from attnlint.reporters.suggestions import LineSuggestion, build_suggestion, code_fence, own_lines
from attnlint.statements import StatementIndex

MAX_COMMENTS = 50
# How the summary of a review with nothing to say begins (attnlint.review does not post those).
NO_PROBLEMS = f"**{TOOL_NAME}** found no problems"
_SECTION = re.compile(r"^## +(.+?)\s*$", re.MULTILINE)


@dataclass
class _Comment:
    path: str
    diag: Diagnostic
    first: int
    last: int
    suggestion: Optional[LineSuggestion] = None
    notes: List[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# Suggestions
# ---------------------------------------------------------------------------------------------
def suggestable(diag: Diagnostic, unsafe_fixes: bool) -> bool:
    fix = diag.fix
    if fix is None or not fix.edits:
        return False
    if fix.applicability is Applicability.SAFE:
        return True
    return unsafe_fixes and fix.applicability is Applicability.UNSAFE


# ---------------------------------------------------------------------------------------------
# Comment bodies
# ---------------------------------------------------------------------------------------------
def _fix_safety(diag: Diagnostic) -> str:
    """The first paragraph of the rule page's *Fix safety* section: why the fix is unsafe."""
    from attnlint.rules import registry

    rule = registry.by_code().get(diag.code)
    page = rule.page() if rule is not None else ""
    headings = list(_SECTION.finditer(page or ""))
    for i, heading in enumerate(headings):
        if heading.group(1).strip().lower() == "fix safety":
            end = headings[i + 1].start() if i + 1 < len(headings) else len(page)
            paragraph = page[heading.end() : end].strip().split("\n\n", 1)[0]
            return " ".join(paragraph.split())
    return ""


def _sentence(text: str) -> str:
    return text if text.endswith((".", "!", "?")) else text + "."


def _heading(diag: Diagnostic) -> str:
    name = diag.name or rule_name(diag.code) or diag.code
    return f"**{diag.code}** [{name}]({diagnostic_url(diag)}): {diag.message}"


def comment_body(comment: _Comment, unsafe_fixes: bool) -> str:
    diag = comment.diag
    parts = [_heading(diag)]
    suggestion = comment.suggestion
    if suggestion is not None:
        others = [d for d in suggestion.diagnostics if d is not diag]
        if others:
            codes = ", ".join(sorted({d.code for d in others}))
            parts.append(f"The suggestion also fixes {plural(len(others), 'overlapping finding')} ({codes}).")
        if suggestion.unsafe:
            for d in suggestion.diagnostics:
                if d.fix.applicability is Applicability.SAFE:
                    continue
                why = _fix_safety(d)
                parts.append(
                    f"> [!WARNING]\n> **Unsafe fix** ({d.code}): {_sentence(d.fix.message)} It can change what this code "
                    f"computes, so check it before committing." + (f"\n> {why}" if why else "")
                )
        else:
            parts.append(f"Safe fix: {_sentence(diag.fix.message)}")
        fence = code_fence(suggestion.text)
        parts.append(
            f"{fence}suggestion\n{suggestion.text}\n{fence}" if suggestion.text else f"{fence}suggestion\n{fence}"
        )
    elif diag.fix is not None and diag.fix.applicability is Applicability.UNSAFE and not unsafe_fixes:
        parts.append(
            f"An unsafe fix is available ({diag.fix.message.rstrip('.')}); it is not suggested because it can change "
            "results. Review it with `attnlint check --diff --unsafe-fixes`."
        )
    parts.extend(comment.notes)
    return "\n\n".join(parts)


# ---------------------------------------------------------------------------------------------
# Placing comments
# ---------------------------------------------------------------------------------------------
def _place(diag: Diagnostic, changes: FileChanges, statements: Optional[StatementIndex]) -> Optional[Tuple[int, int]]:
    """Lines for a comment without suggestion: the finding's own if the diff shows them all, else
    its first line the diff shows, else the first changed line of its statement (which is why
    `--diff-base` kept it)."""
    first, last = own_lines(diag)
    if changes.hunk_holding(first, last):
        return first, last
    for line in range(first, last + 1):
        if changes.hunk_holding(line, line):
            return line, line
    if statements is not None:
        lo, hi = statements.statement_lines(first, last)
        for line in range(lo, hi + 1):
            if changes.is_added(line):
                return line, line
    return None


def _file_comments(
    result: FileResult, changes: FileChanges, unsafe_fixes: bool
) -> Tuple[List[_Comment], List[Diagnostic]]:
    comments: List[_Comment] = []
    unplaced: List[Diagnostic] = []
    path = changes.repo_path
    statements = StatementIndex(result.source) if result.source is not None else None
    open_suggestion: Optional[_Comment] = None  # the last comment with a suggestion
    for diag in result.diagnostics:
        if result.source is not None and suggestable(diag, unsafe_fixes):
            comment = _suggested_comment(result.source, path, diag, changes, open_suggestion, statements)
            if comment is not None:
                if comment.suggestion is not None:
                    open_suggestion = comment
                comments.append(comment)
                continue
        lines = _place(diag, changes, statements)
        if lines is None:
            unplaced.append(diag)
            continue
        comment = _Comment(path, diag, *lines)
        if suggestable(diag, unsafe_fixes):
            comment.notes.append(
                "Its fix cannot be suggested on the lines this change shows; apply it with `attnlint check --fix`."
            )
        comments.append(comment)
    return comments, unplaced


def _suggested_comment(
    source: str,
    path: str,
    diag: Diagnostic,
    changes: FileChanges,
    previous: Optional[_Comment],
    statements: Optional[StatementIndex],
) -> Optional[_Comment]:
    alone = build_suggestion(source, [diag])
    if alone is None:
        return None
    if previous is not None and alone.first <= previous.suggestion.last:
        # Overlapping suggestions cannot both be committed: suggest the fixes together, once.
        merged = build_suggestion(source, previous.suggestion.diagnostics + [diag])
        if merged is not None and changes.hunk_holding(merged.first, merged.last):
            previous.suggestion = merged
            previous.first, previous.last = merged.first, merged.last
            lines = _place(diag, changes, statements)
            if lines is None:
                return _Comment(path, diag, previous.first, previous.first)
            comment = _Comment(path, diag, *lines)
            comment.notes.append(f"The suggestion on line {previous.last} fixes this too.")
            return comment
        lines = _place(diag, changes, statements)
        if lines is None:
            return None
        comment = _Comment(path, diag, *lines)
        comment.notes.append(
            f"Its fix overlaps the suggestion on line {previous.last}; commit that one, "
            "then run `attnlint check --fix`."
        )
        return comment
    if not changes.hunk_holding(alone.first, alone.last):
        return None
    return _Comment(path, diag, alone.first, alone.last, alone)


# ---------------------------------------------------------------------------------------------
# The review
# ---------------------------------------------------------------------------------------------
def _comment_json(comment: _Comment, unsafe_fixes: bool) -> Dict[str, Any]:
    entry: Dict[str, Any] = {"path": comment.path, "line": comment.last, "side": "RIGHT"}
    if comment.first < comment.last:
        entry["start_line"] = comment.first
        entry["start_side"] = "RIGHT"
    entry["body"] = comment_body(comment, unsafe_fixes)
    return entry


def _listing(path: str, diag: Diagnostic) -> str:
    line, column = one_based(diag.start)
    return f"- `{path}:{line}:{column}` **{diag.code}** {diag.message} ([{diag.name}]({diagnostic_url(diag)}))"


def build_review(
    results: Sequence[FileResult],
    diff_scope: Mapping[str, FileChanges],
    *,
    unsafe_fixes: bool = False,
    max_comments: int = MAX_COMMENTS,
) -> Dict[str, Any]:
    """The review as a dict (see the module docstring); ``results`` already hold only new findings."""
    comments: List[_Comment] = []
    in_summary: List[Tuple[str, Diagnostic]] = []
    for result in results:
        changes = diff_scope.get(result.path)
        if changes is None:
            in_summary.extend((result.path, d) for d in result.diagnostics)
            continue
        placed, unplaced = _file_comments(result, changes, unsafe_fixes)
        comments.extend(placed)
        in_summary.extend((changes.repo_path, d) for d in unplaced)
    overflow = comments[max_comments:]
    comments = comments[:max_comments]
    in_summary.extend((c.path, c.diag) for c in overflow)

    total = len(comments) + len(in_summary)
    suggestions = sum(1 for c in comments if c.suggestion is not None)
    if total == 0:
        body = f"{NO_PROBLEMS} in the lines this change adds. All checks passed!"
    else:
        body = f"**{TOOL_NAME}** found {plural(total, 'problem')} in the lines this change adds."
        if suggestions:
            body += f" {plural(suggestions, 'comment')} with a suggested fix (commit it from the comment)."
    if overflow:
        body += f"\n\nOnly the first {max_comments} are comments; the other {len(overflow)}:"
    elif in_summary:
        body += "\n\nNot on a line this review can comment on:"
    if in_summary:
        body += "\n\n" + "\n".join(_listing(path, diag) for path, diag in in_summary)
    return {
        "event": "COMMENT",
        "body": body,
        "comments": [_comment_json(c, unsafe_fixes) for c in comments],
    }


def render_github_review(
    results: Sequence[FileResult], diff_scope: Optional[Mapping[str, FileChanges]], *, unsafe_fixes: bool
) -> str:
    if diff_scope is None:
        raise ValueError(
            "--output-format github-review needs --diff-base (GitHub accepts review comments only on "
            "lines in the pull request's diff)"
        )
    # A notebook's pull-request diff is of its JSON text: comment there (without suggestions).
    review = build_review([on_disk(r) for r in results], diff_scope, unsafe_fixes=unsafe_fixes)
    return json.dumps(review, indent=2, ensure_ascii=False) + "\n"
