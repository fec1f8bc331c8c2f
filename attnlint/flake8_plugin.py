"""attnlint as a flake8 plugin: `flake8 --select=ATN src/`.

flake8 runs every plugin on every file whatever `--select` says, so this module imports nothing
heavy at import time and skips files that cannot match before parsing. flake8 handles `# noqa`
itself (on the reported line, prefix match) and has no fix protocol, so fixes are not offered.
"""

from __future__ import annotations

from typing import Any, Iterator, List, Optional, Tuple, Type


class AttnlintChecker:
    name = "attnlint"
    version = "0.1.0"  # kept equal to attnlint.__version__ by a test

    # Per-rule options come from `[tool.attnlint]` in pyproject.toml (the closest one, or the file
    # given with --attnlint-config), so flake8 and the attnlint CLI judge code alike.
    _config_path: Optional[str] = None
    _settings = None

    # flake8 matches these parameter names.
    def __init__(self, tree: Any, filename: str, lines: List[str]) -> None:
        self.filename = filename
        self.lines = lines

    @classmethod
    def add_options(cls, option_manager) -> None:
        option_manager.add_option(
            "--attnlint-config",
            default=None,
            parse_from_config=True,
            help="pyproject.toml whose [tool.attnlint] rule options apply (default: the closest one)",
        )

    @classmethod
    def parse_options(cls, options) -> None:
        cls._config_path = getattr(options, "attnlint_config", None)
        cls._settings = None

    @classmethod
    def _load_settings(cls):
        if cls._settings is None:
            from pathlib import Path

            from attnlint.config import Settings, load_settings

            loaded = load_settings(Path(cls._config_path) if cls._config_path else None)
            # flake8 applies --select/--extend-ignore and noqa to what we yield: run every rule.
            cls._settings = Settings(select=["ATN"], respect_gitignore=False, rule_options=loaded.rule_options)
        return cls._settings

    def run(self) -> Iterator[Tuple[int, int, str, Type["AttnlintChecker"]]]:
        from attnlint.engine import check_source

        # flake8 already stripped the BOM from `lines`.
        source = "".join(self.lines)
        result = check_source(source, self.filename, self._load_settings(), apply_noqa=False)
        for diag in result.diagnostics:
            if diag.code == "ATN001":
                continue  # flake8 reports syntax errors itself (E999)
            message = f"{diag.code} {diag.message}"
            # flake8 wants 0-based columns; it adds 1 when printing.
            yield diag.start.line, diag.start.column, message, type(self)
