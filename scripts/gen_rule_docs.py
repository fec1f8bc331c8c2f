"""Write docs/rules/<name>.md, docs/rules/README.md and the README's rules table from the registry.

python scripts/gen_rule_docs.py          # write the pages and the table
python scripts/gen_rule_docs.py --check  # exit 1 when a page or the table is out of date (tests run this)
"""

from __future__ import annotations

import sys
from pathlib import Path

from attnlint.docs import README_TABLE_END, README_TABLE_START, render_readme_table, render_rule_index, render_rule_page
from attnlint.rules import registry

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "rules"
README = ROOT / "README.md"


def expected_pages() -> dict:
    pages = {DOCS / f"{rule.name}.md": render_rule_page(rule) for rule in registry.all_rules()}
    pages[DOCS / "README.md"] = render_rule_index(registry.all_rules())
    pages[README] = _readme_with_table(README.read_text(encoding="utf-8"))
    return pages


def _readme_with_table(readme: str) -> str:
    if README_TABLE_START not in readme or README_TABLE_END not in readme:
        raise SystemExit(f"README.md lacks the {README_TABLE_START} ... {README_TABLE_END} markers")
    head, rest = readme.split(README_TABLE_START, 1)
    _, tail = rest.split(README_TABLE_END, 1)
    return f"{head}{README_TABLE_START}\n{render_readme_table(registry.all_rules())}{README_TABLE_END}{tail}"


def main(argv) -> int:
    pages = expected_pages()
    if "--check" in argv:
        stale = [
            str(path.relative_to(ROOT))
            for path, text in pages.items()
            if not path.is_file() or path.read_text(encoding="utf-8") != text
        ]
        # A page left behind by a renamed or removed rule is stale too.
        stale += [str(p.relative_to(ROOT)) for p in sorted(DOCS.glob("*.md")) if p not in pages]
        if stale:
            print("out of date: " + ", ".join(stale) + " (run python scripts/gen_rule_docs.py)")
            return 1
        return 0
    DOCS.mkdir(parents=True, exist_ok=True)
    for path in sorted(DOCS.glob("*.md")):
        if path not in pages:
            path.unlink()
    for path, text in pages.items():
        path.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
