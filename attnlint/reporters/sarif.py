"""SARIF 2.1.0, shaped for GitHub code scanning (which is what most people upload it to).

GitHub-specific points: every registered rule is described in
`tool.driver.rules[]` with a fullDescription of at most 1024 characters (ruff exceeds it and the
upload warns); URIs are relative to `%SRCROOT%`; `primaryLocationLineHash` lets GitHub keep
tracking an alert across unrelated edits (see _Fingerprints); `helpUri` is the rule's page.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Type
from urllib.parse import quote

from attnlint.diagnostics import DOCS_HOME, SYNTAX_ERROR_CODE, Applicability, Diagnostic, FileResult, Fix, Position
from attnlint.reporters.common import (
    TOOL_NAME,
    diagnostic_url,
    on_disk,
    one_based,
    rule_page_url,
    stable_hash,
    tool_version,
)
from attnlint.rules import registry
from attnlint.rules.base import Rule
from attnlint.statements import StatementIndex

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SRCROOT = "%SRCROOT%"
LEVEL = "error"
# GitHub truncates longer fullDescriptions and warns about them on upload.
FULL_DESCRIPTION_LIMIT = 1024

_SECTION = re.compile(r"^#+\s*(.*?)\s*$", re.MULTILINE)


# ---------------------------------------------------------------------------------------------
# Rules
# ---------------------------------------------------------------------------------------------
def _first_section(page: str) -> str:
    """The body of the page's first section (ruff's pages open with "What it does")."""
    headings = list(_SECTION.finditer(page))
    if not headings:
        return page.strip()
    body_end = headings[1].start() if len(headings) > 1 else len(page)
    body = page[headings[0].end() : body_end].strip()
    return body or page.strip()


def truncate(text: str, limit: int = FULL_DESCRIPTION_LIMIT) -> str:
    """Cut at a paragraph (else word) boundary and mark the cut, staying within ``limit``."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]  # room for the ellipsis
    paragraph = cut.rfind("\n\n")
    word = cut.rfind(" ")
    if paragraph > limit // 2:
        cut = cut[:paragraph]
    elif word > 0:
        cut = cut[:word]
    return cut.rstrip() + "…"


def rule_descriptor(rule: Type[Rule]) -> Dict[str, Any]:
    page = rule.page() or rule.summary
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": truncate(_first_section(page) or rule.summary)},
        # The page is markdown; it also reads fine as plain text, which is what `text` is for.
        "help": {"text": page, "markdown": page},
        "helpUri": rule_page_url(rule.name),
        "defaultConfiguration": {"level": LEVEL},
        "properties": {"fixAvailability": rule.fix_availability.value},
    }


def _ad_hoc_descriptor(diag: Diagnostic) -> Dict[str, Any]:
    """For a code with no rule class (the syntax-error pseudo-rule): every result needs a rule."""
    summary = "The file could not be parsed." if diag.code == SYNTAX_ERROR_CODE else diag.name
    return {
        "id": diag.code,
        "name": diag.name,
        "shortDescription": {"text": summary},
        "fullDescription": {"text": summary},
        "helpUri": diagnostic_url(diag),
        "defaultConfiguration": {"level": LEVEL},
    }


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------
def artifact_uri(path: str) -> str:
    """A relative URI reference: forward slashes, percent-encoded (spaces and `#` break URIs)."""
    return quote(path.replace("\\", "/"), safe="/")


def _artifact_location(path: str) -> Dict[str, str]:
    return {"uri": artifact_uri(path), "uriBaseId": SRCROOT}


def region(start: Position, end: Position) -> Dict[str, int]:
    start_line, start_column = one_based(start)
    end_line, end_column = one_based(end)
    return {"startLine": start_line, "startColumn": start_column, "endLine": end_line, "endColumn": end_column}


def _fix_description(fix: Fix) -> str:
    if fix.applicability is Applicability.UNSAFE:
        return f"{fix.message} (unsafe fix: it may change numerical results; applied only with --unsafe-fixes)"
    if fix.applicability is Applicability.DISPLAY_ONLY:
        return f"{fix.message} (display-only fix: never applied automatically)"
    return fix.message


def sarif_fix(path: str, fix: Fix) -> Optional[Dict[str, Any]]:
    if not fix.edits:  # SARIF requires at least one replacement
        return None
    replacements = [
        {"deletedRegion": region(edit.start, edit.end), "insertedContent": {"text": edit.content}} for edit in fix.edits
    ]
    return {
        "description": {"text": _fix_description(fix)},
        "artifactChanges": [{"artifactLocation": _artifact_location(path), "replacements": replacements}],
        "properties": {"applicability": fix.applicability.value},
    }


class _Fingerprints:
    """`partialFingerprints.primaryLocationLineHash` for one file's findings, as `hash:count`.

    The hash covers the rule, the finding's whole statement with whitespace runs collapsed, and
    the dotted name of its enclosing definition (`Attention.forward`): never a line number. So
    the value survives lines moving (an import added above), re-indentation and reformatting of
    the statement, which is what keeps code scanning from closing and reopening the alert; it
    changes when the statement itself changes or moves to another function. The count numbers
    identical (rule, statement, scope) triples in file order, so that findings on two identical
    statements stay two alerts.
    """

    def __init__(self, source: Optional[str]) -> None:
        self._index = StatementIndex(source) if source is not None else None
        self._seen: Dict[str, int] = {}

    def __call__(self, diag: Diagnostic) -> Optional[str]:
        if self._index is None:  # no source: let the upload action compute fingerprints itself
            return None
        first, last = diag.start.line, diag.end.line
        digest = stable_hash(diag.code, self._index.statement_text(first, last), self._index.scope(first, last))
        count = self._seen.get(digest, 0) + 1
        self._seen[digest] = count
        return f"{digest}:{count}"


def sarif_result(diag: Diagnostic, rule_index: int, line_hash: _Fingerprints) -> Dict[str, Any]:
    result: Dict[str, Any] = {
        "ruleId": diag.code,
        "ruleIndex": rule_index,
        "level": LEVEL,
        "message": {"text": diag.message},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": _artifact_location(diag.path),
                    "region": region(diag.start, diag.end),
                }
            }
        ],
    }
    fingerprint = line_hash(diag)
    if fingerprint is not None:
        result["partialFingerprints"] = {"primaryLocationLineHash": fingerprint}
    fix = sarif_fix(diag.path, diag.fix) if diag.fix is not None else None
    if fix is not None:
        result["fixes"] = [fix]
    return result


def _notifications(results: Sequence[FileResult]) -> List[Dict[str, Any]]:
    """Files that could not be read or parsed, unless a syntax-error result already says so."""
    notes = []
    for file_result in results:
        if file_result.error is None:
            continue
        if any(d.code == SYNTAX_ERROR_CODE for d in file_result.diagnostics):
            continue
        notes.append(
            {
                "level": "error",
                "message": {"text": f"{file_result.path}: {file_result.error}"},
                "locations": [{"physicalLocation": {"artifactLocation": _artifact_location(file_result.path)}}],
            }
        )
    return notes


def _srcroot_uri() -> str:
    # Paths are reported relative to the working directory; SARIF wants the base to end in "/".
    uri = Path.cwd().resolve().as_uri()
    return uri if uri.endswith("/") else uri + "/"


def render_sarif(results: Sequence[FileResult]) -> str:
    rules: List[Dict[str, Any]] = [rule_descriptor(rule) for rule in registry.all_rules()]
    index = {descriptor["id"]: i for i, descriptor in enumerate(rules)}
    sarif_results: List[Dict[str, Any]] = []
    for file_result in results:
        fingerprint = _Fingerprints(file_result.source)
        # A notebook's findings are placed in its JSON file; fingerprints come from its code.
        shown = on_disk(file_result)
        for diag, placed in zip(file_result.diagnostics, shown.diagnostics):
            if diag.code not in index:
                index[diag.code] = len(rules)
                rules.append(_ad_hoc_descriptor(diag))
            sarif_results.append(sarif_result(placed, index[diag.code], lambda _, diag=diag: fingerprint(diag)))

    invocation: Dict[str, Any] = {"executionSuccessful": True}
    notifications = _notifications(results)
    if notifications:
        invocation["toolExecutionNotifications"] = notifications

    run = {
        "tool": {
            "driver": {
                "name": TOOL_NAME,
                "version": tool_version(),
                "informationUri": DOCS_HOME,
                "rules": rules,
            }
        },
        # GitHub takes the part before the last "/" as the analysis category.
        "automationDetails": {"id": f"{TOOL_NAME}/"},
        "columnKind": "unicodeCodePoints",
        "originalUriBaseIds": {SRCROOT: {"uri": _srcroot_uri()}},
        "invocations": [invocation],
        "results": sarif_results,
    }
    report = {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}
    return json.dumps(report, indent=2, ensure_ascii=False) + "\n"
