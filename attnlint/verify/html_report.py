"""``attnlint verify --report FILE.html``: one self-contained page a reviewer can look at.

Per finding: the verdict, the diff of the fix, the verdict per device/dtype with the largest error and
its bound, every check, and heat maps of the attention weights of the original, the fixed code and
the reference (inline SVG, no script, no network). A NaN cell is drawn in magenta, so an all-masked
row that turned into NaN is a magenta stripe; weights summing to one over the wrong axis show as
columns, not rows; a missing scale shows as weights much sharper than the reference's.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from attnlint.verify.session import FindingVerdict

NAN_COLOUR = "#ff00ff"
CELL = 26  # pixels per weight


def weight_colour(value: float) -> str:
    """0 -> white, 1 -> dark blue (a linear ramp); NaN -> magenta; out of [0, 1] clipped."""
    if value is None or math.isnan(value):
        return NAN_COLOUR
    t = min(1.0, max(0.0, value))
    start, end = (255, 255, 255), (8, 48, 107)
    r, g, b = (round(s + (e - s) * t) for s, e in zip(start, end))
    return f"#{r:02x}{g:02x}{b:02x}"


def heatmap_svg(rows: Optional[Sequence[Sequence[float]]], title: str, note: str = "") -> str:
    """An SVG heat map of an (n_q, n_k) weight matrix, queries down, keys across."""
    if not rows:
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{7 * CELL + 40}" height="{7 * CELL + 40}" '
            f'class="heatmap empty" role="img"><title>{_esc(title)}</title>'
            f'<rect x="20" y="30" width="{7 * CELL}" height="{7 * CELL}" fill="#eeeeee" stroke="#999"/>'
            f'<text x="24" y="20" font-size="12">{_esc(title)}</text>'
            f'<text x="{20 + 3.5 * CELL}" y="{30 + 3.5 * CELL}" font-size="13" fill="#a00" text-anchor="middle">'
            f"{'raised' if note else 'no weights'}</text>"
            "</svg>"
        )
    n_q, n_k = len(rows), len(rows[0])
    width, height = n_k * CELL + 40, n_q * CELL + 40
    cells: List[str] = []
    for i, row in enumerate(rows):
        for j, value in enumerate(row):
            shown = "NaN" if value is None or math.isnan(value) else f"{value:.3f}"
            cells.append(
                f'<rect x="{20 + j * CELL}" y="{30 + i * CELL}" width="{CELL}" height="{CELL}" '
                f'fill="{weight_colour(value)}"><title>q{i} k{j}: {shown}</title></rect>'
            )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" class="heatmap" role="img">'
        f"<title>{_esc(title)}</title>"
        f'<text x="20" y="20" font-size="12">{_esc(title)}</text>' + "".join(cells) + f'<rect x="20" y="30" '
        f'width="{n_k * CELL}" height="{n_q * CELL}" fill="none" stroke="#555"/></svg>'
    )


def _esc(text: str) -> str:
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _pictures(finding: FindingVerdict) -> Dict[str, Any]:
    pictures = finding.pictures or {}
    if "unavailable" in pictures or not pictures:
        return {"unavailable": pictures.get("unavailable", "no pictures were asked for"), "maps": []}
    maps = []
    for name in ("original", "fixed", "reference"):
        error = pictures.get(f"{name}_error")
        maps.append({"name": name, "svg": heatmap_svg(pictures.get(name), name, error or ""), "error": error})
    return {"unavailable": None, "maps": maps, "input": pictures.get("input"), "batch": pictures.get("batch_index")}


def diff_lines(diff: str) -> List[tuple]:
    """(kind, text) per line of a unified diff: add, del, hunk or context."""
    out = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        elif line.startswith("@@"):
            kind = "hunk"
        else:
            kind = "context"
        out.append((kind, line))
    return out


def render_report(findings: Sequence[FindingVerdict], *, title: str = "attnlint verify") -> str:
    import jinja2

    from attnlint import __version__

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(Path(__file__).resolve().parents[1] / "templates")),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    template = env.get_template("verify_report.html.j2")
    items = [{"f": f, "runs": f.runs(), "pictures": _pictures(f), "diff_lines": diff_lines(f.diff)} for f in findings]
    counts: Dict[str, int] = {}
    for f in findings:
        counts[f.verdict] = counts.get(f.verdict, 0) + 1
    return template.render(
        title=title, items=items, counts=counts, version=__version__, nan_colour=NAN_COLOUR, fmt=_fmt
    )


def _fmt(value: Optional[float]) -> str:
    if value is None:
        return "–"
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return f"{value:.2e}"


def write_report(path: Path, findings: Sequence[FindingVerdict]) -> None:
    from attnlint.fileio import write_new

    write_new(path, render_report(findings).encode("utf-8"))
