"""`json` and `json-lines`: ruff's JSON shape, so tools that read ruff's output read ours.

Field names are ruff's (plus `name`, the rule's kebab-case name). Columns are 1-based code points
and ends exclusive, as in ruff. Non-ASCII stays as is (ruff's serde output does not escape it).
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence

from attnlint.diagnostics import Diagnostic, Edit, FileResult, Fix, Position
from attnlint.reporters.common import cell_position, diagnostic_url, iter_diagnostics, one_based
from attnlint.reporters.text import statistics


def _location(pos: Position, result: Optional[FileResult] = None) -> Dict[str, int]:
    # In a notebook, rows count within the cell (ruff's JSON; the cell is in `cell`).
    row, column = one_based(cell_position(result, pos)[1] if result is not None else pos)
    return {"row": row, "column": column}


def _edit(edit: Edit, result: Optional[FileResult]) -> Dict[str, Any]:
    return {
        "content": edit.content,
        "location": _location(edit.start, result),
        "end_location": _location(edit.end, result),
    }


def _fix(fix: Optional[Fix], result: Optional[FileResult]) -> Optional[Dict[str, Any]]:
    if fix is None:
        return None
    return {
        "applicability": fix.applicability.value,
        "message": fix.message,
        "edits": [_edit(edit, result) for edit in fix.edits],
    }


def diagnostic_json(diag: Diagnostic, result: Optional[FileResult] = None) -> Dict[str, Any]:
    """ruff's fields. `cell` is the notebook cell (1-based, as ruff counts) or null."""
    cell = cell_position(result, diag.start)[0] if result is not None else None
    noqa_row = diag.noqa_row
    if noqa_row and cell is not None:
        noqa_row = cell_position(result, Position(noqa_row, 0))[1].line
    return {
        "cell": cell,
        "code": diag.code,
        "name": diag.name,
        "message": diag.message,
        "filename": diag.path,
        "location": _location(diag.start, result),
        "end_location": _location(diag.end, result),
        "fix": _fix(diag.fix, result),
        # 0 means "no line to put a noqa on" (e.g. a syntax error); ruff writes null there.
        "noqa_row": noqa_row or None,
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
    return _dump_pretty([diagnostic_json(diag, result) for result, diag in iter_diagnostics(results)])


def render_json_lines(results: Sequence[FileResult]) -> str:
    lines: List[str] = [
        json.dumps(diagnostic_json(diag, result), ensure_ascii=False, separators=(",", ":"))
        for result, diag in iter_diagnostics(results)
    ]
    return "".join(line + "\n" for line in lines)
