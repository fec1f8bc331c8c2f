"""docs/ outside the rule pages stays true: generated pages current, links resolving, the action's
inputs and every output format documented, nothing shipped pointing outside the repository."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from attnlint.config import settings_from_table
from attnlint.reporters import FORMATS

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = (ROOT / "README.md").read_text(encoding="utf-8")
INTEGRATIONS = (DOCS / "integrations.md").read_text(encoding="utf-8")


def test_configuration_page_is_generated_and_current():
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_config_docs.py"), "--check"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_configuration_page_example_loads():
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib

    page = (DOCS / "configuration.md").read_text(encoding="utf-8")
    example = page.split("```toml\n", 1)[1].split("```", 1)[0]
    table = tomllib.loads(example)["tool"]["attnlint"]
    settings = settings_from_table(table, ROOT)
    assert settings.extend_select == ["ATN2"]
    assert settings.rule_options == {"ATN103": {"replacement": "mT"}}


def test_every_action_input_is_documented():
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    inputs = set(action["inputs"])
    assert inputs == {"version", "args", "diff-base", "review", "unsafe-suggestions", "sarif"}
    for name, spec in action["inputs"].items():
        assert f"| `{name}` | `{spec['default']}` |" in INTEGRATIONS, name
    assert "inputs: version, args, diff-base, review, unsafe-suggestions, sarif" in README


def test_every_output_format_is_documented():
    listed = re.search(r"`--output-format ([a-z|-]+)`", README).group(1).split("|")
    assert tuple(listed) == FORMATS
    for fmt in FORMATS:
        if fmt not in ("full", "concise", "sarif", "rdjson", "gitlab", "github-review"):
            assert f"`{fmt}`" in INTEGRATIONS, fmt


_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize(
    "page", [ROOT / "README.md", DOCS / "README.md", DOCS / "integrations.md", DOCS / "configuration.md"], ids=str
)
def test_relative_links_resolve(page):
    for target in _LINK.findall(page.read_text(encoding="utf-8")):
        if "://" in target:
            continue
        assert (page.parent / target).exists(), f"{page.name}: dead link {target}"


# Paths outside the repository: an absolute /work or /home path, or the project's private notes.
_OUTSIDE = re.compile(r"(/work/|/home/|/root/|\.\./shared|shared/notes|shared/schemas)")
# Nothing shipped may point at private notes (none does; keep it that way).
KNOWN_OUTSIDE: set = set()


def test_nothing_shipped_points_outside_the_repository():
    shipped = [ROOT / "README.md", ROOT / "action.yml"]
    shipped += sorted((ROOT / "attnlint").rglob("*.py")) + sorted((ROOT / "attnlint").rglob("*.j2"))
    shipped += sorted(DOCS.rglob("*.md"))
    offenders = {
        path.relative_to(ROOT).as_posix()
        for path in shipped
        if _OUTSIDE.search(path.read_text(encoding="utf-8", errors="replace"))
    }
    assert offenders - KNOWN_OUTSIDE == set(), "shipped files must not reference paths outside the repository"
    assert KNOWN_OUTSIDE - offenders == set(), "fixed: remove these from KNOWN_OUTSIDE"
