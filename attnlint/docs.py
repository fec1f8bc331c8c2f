"""Rule pages: one template renders `attnlint rule CODE`, docs/rules/*.md and SARIF help."""

from __future__ import annotations

from functools import lru_cache

import jinja2


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("attnlint", "templates"),
        autoescape=False,  # markdown, not HTML
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_rule_page(rule) -> str:
    text = _environment().get_template("rule.md.j2").render(rule=rule)
    # Collapse the blank lines that optional sections leave behind.
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text.strip() + "\n"
