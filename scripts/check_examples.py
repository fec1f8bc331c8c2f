"""The bundled examples report exactly the findings their docstrings announce.

Each file in examples/ names, in its module docstring, the codes it demonstrates (`- ATN204: ...`).
This script runs attnlint's engine on every file and compares: a missing finding or an
unannounced one fails. `.ci/run` and tests/test_examples.py both use it, so no count is kept by hand.

python scripts/check_examples.py   # exit 1 and say what differs when they disagree
"""

from __future__ import annotations

import ast
import re
import sys
from collections import Counter
from pathlib import Path
from typing import List, Tuple

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
CODE = re.compile(r"\bATN\d{3}\b")


def announced(path: Path) -> Counter:
    """Codes the docstring announces, one per bullet (`- ATN201: ...` or `(ATN204; ...)`)."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return Counter(CODE.findall(doc))


def reported(path: Path) -> Counter:
    from attnlint.config import Settings
    from attnlint.engine import check_source

    result = check_source(path.read_text(encoding="utf-8"), str(path), Settings())
    if result.error is not None:
        raise SystemExit(f"{path}: {result.error}")
    return Counter(d.code for d in result.diagnostics)


def differences() -> List[str]:
    problems = []
    files = sorted(EXAMPLES.glob("*.py"))
    if not files:
        return ["examples/ holds no example files"]
    for path in files:
        want, got = announced(path), reported(path)
        if not want:
            problems.append(f"{path.name}: its docstring announces no finding")
        for code in sorted(set(want) | set(got)):
            if want[code] != got[code]:
                problems.append(f"{path.name}: {code} announced {want[code]}x, reported {got[code]}x")
    return problems


def findings() -> List[Tuple[str, str, int]]:
    """(file name, code, line) for every finding on the bundled examples."""
    from attnlint.config import Settings
    from attnlint.engine import check_source

    out = []
    for path in sorted(EXAMPLES.glob("*.py")):
        result = check_source(path.read_text(encoding="utf-8"), str(path), Settings())
        out += [(path.name, d.code, d.start.line) for d in result.diagnostics]
    return out


def main() -> int:
    problems = differences()
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
