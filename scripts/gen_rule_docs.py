"""Write docs/rules/<name>.md from the rules themselves (the page lives in the rule's docstring).

python scripts/gen_rule_docs.py          # write the pages
python scripts/gen_rule_docs.py --check  # exit 1 when a page is out of date (tests run this)
"""

from __future__ import annotations

import sys
from pathlib import Path

from attnlint.docs import render_rule_page
from attnlint.rules import registry

DOCS = Path(__file__).resolve().parent.parent / "docs" / "rules"


def expected_pages() -> dict:
    pages = {f"{rule.name}.md": render_rule_page(rule) for rule in registry.all_rules()}
    index = ["# Rules", "", "| Code | Name | Fix | Summary |", "| --- | --- | --- | --- |"]
    for rule in registry.all_rules():
        fix = rule.fix_applicability.value if rule.fix_applicability else "none"
        index.append(f"| {rule.code} | [{rule.name}]({rule.name}.md) | {fix} | {rule.summary} |")
    pages["README.md"] = "\n".join(index) + "\n"
    return pages


def main(argv) -> int:
    pages = expected_pages()
    if "--check" in argv:
        stale = [n for n, text in pages.items() if not (DOCS / n).is_file() or (DOCS / n).read_text() != text]
        if stale:
            print("out of date: " + ", ".join(stale) + " (run python scripts/gen_rule_docs.py)")
            return 1
        return 0
    DOCS.mkdir(parents=True, exist_ok=True)
    for name, text in pages.items():
        (DOCS / name).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
