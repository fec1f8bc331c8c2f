"""`json` and `json-lines`: ruff's JSON shape, so tools that read ruff's output read ours.

Field names are ruff's (plus `name`, the rule's kebab-case name). Columns are 1-based code points
and ends exclusive, as in ruff. Non-ASCII stays as is (ruff's serde output does not escape it).
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence

from attnlint.diagnostics import Diagnostic, Edit, FileResult, Fix, Position
from attnlint.reporters.common import diagnostic_url, iter_diagnostics, one_based
from attnlint.reporters.text import statistics


def _location(pos: Position) -> Dict[str, int]:
    row, column = one_based(pos)
    return {"row": row, "column": column}


def _edit(edit: Edit) -> Dict[str, Any]:
    return {"content": edit.content, "location": _location(edit.start), "end_location": _location(edit.end)}


def _fix(fix: Optional[Fix]) -> Optional[Dict[str, Any]]:
    if fix is None:
        return None
    return {
        "applicability": fix.applicability.value,
        "message": fix.message,
        "edits": [_edit(edit) for edit in fix.edits],
    }


def diagnostic_json(diag: Diagnostic) -> Dict[str, Any]:
    return {
        "code": diag.code,
        "name": diag.name,
        "message": diag.message,
        "filename": diag.path,
        "location": _location(diag.start),
        "end_location": _location(diag.end),
        "fix": _fix(diag.fix),
        # 0 means "no line to put a noqa on" (e.g. a syntax error); ruff writes null there.
        "noqa_row": diag.noqa_row or None,
        "url": diagnostic_url(diag),
    }


def _dump_pretty(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def render_json(results: Sequence[FileResult], *, statistics_only: bool, unsafe_fixes: bool) -> str:
    if statistics_only:
        # ruff's `--statistics --output-format json`: one object per code.
        stats = [
            {"code": s.code, "name": s.name, "count": s.count, "fixable": s.fixable}
            for s in statistics(results, unsafe_fixes)
        ]
        return _dump_pretty(stats)
    return _dump_pretty([diagnostic_json(diag) for _, diag in iter_diagnostics(results)])


def render_json_lines(results: Sequence[FileResult]) -> str:
    lines: List[str] = [
        json.dumps(diagnostic_json(diag), ensure_ascii=False, separators=(",", ":"))
        for _, diag in iter_diagnostics(results)
    ]
    return "".join(line + "\n" for line in lines)
