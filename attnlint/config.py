"""Settings: `[tool.attnlint]` in pyproject.toml, then command-line overrides (CLI wins).

The closest pyproject.toml with a `[tool.attnlint]` table, from the current directory upwards,
is the configuration (or the file named by `--config`). Keys use ruff's spelling
(`per-file-ignores`, `extend-select`, ...); per-rule options live in a table named after the rule:

    [tool.attnlint.missing-attention-scale]
    ...
"""

from __future__ import annotations

import fnmatch
import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any, Dict, List, Optional, Sequence

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from attnlint.diagnostics import Applicability


class ConfigError(Exception):
    """A configuration or usage problem; the CLI reports it and exits 2."""


DEFAULT_EXCLUDE = (
    ".bzr",
    ".direnv",
    ".eggs",
    ".git",
    ".git-rewrite",
    ".hg",
    ".mypy_cache",
    ".nox",
    ".pants.d",
    ".pytype",
    ".ruff_cache",
    ".svn",
    ".tox",
    ".venv",
    "__pypackages__",
    "_build",
    "buck-out",
    "dist",
    "node_modules",
    "venv",
    ".attnlint_cache",
)

_LIST_KEYS = {
    "select",
    "ignore",
    "extend-select",
    "exclude",
    "extend-exclude",
    "fixable",
    "unfixable",
    "extend-safe-fixes",
    "extend-unsafe-fixes",
}
_BOOL_KEYS = {"respect-gitignore", "force-exclude", "unsafe-fixes"}
_TABLE_KEYS = {"per-file-ignores"}


@dataclass
class Settings:
    select: List[str] = field(default_factory=lambda: ["ATN"])
    ignore: List[str] = field(default_factory=list)
    extend_select: List[str] = field(default_factory=list)
    per_file_ignores: Dict[str, List[str]] = field(default_factory=dict)
    exclude: List[str] = field(default_factory=lambda: list(DEFAULT_EXCLUDE))
    extend_exclude: List[str] = field(default_factory=list)
    respect_gitignore: bool = True
    force_exclude: bool = False
    unsafe_fixes: bool = False
    fixable: List[str] = field(default_factory=lambda: ["ALL"])
    unfixable: List[str] = field(default_factory=list)
    extend_safe_fixes: List[str] = field(default_factory=list)
    extend_unsafe_fixes: List[str] = field(default_factory=list)
    # Report findings even where a `# noqa` comment silences them (--ignore-noqa).
    ignore_noqa: bool = False
    # Where the result cache lives (--cache-dir); None: `.attnlint_cache/` at the project root.
    cache_dir: Optional[Path] = None
    # rule code -> option name -> value
    rule_options: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    # The directory paths in the config are relative to.
    root: Path = field(default_factory=Path.cwd)
    config_path: Optional[Path] = None

    # --- rule selection ---------------------------------------------------------------
    def selected_codes(self, all_codes: Sequence[str]) -> List[str]:
        chosen = set()
        for sel in list(self.select) + list(self.extend_select):
            chosen |= set(_expand(sel, all_codes))
        for ign in self.ignore:
            chosen -= set(_expand(ign, all_codes))
        return sorted(chosen)

    def ignored_for_path(self, path: str, all_codes: Sequence[str]) -> set:
        """Codes that per-file-ignores switches off for `path`."""
        rel = _relative_posix(path, self.root)
        off = set()
        for pattern, codes in self.per_file_ignores.items():
            negated = pattern.startswith("!")
            glob = pattern[1:] if negated else pattern
            matched = _glob_match(rel, glob)
            if matched != negated:
                for code in codes:
                    off |= set(_expand(code, all_codes))
        return off

    def is_fixable(self, code: str) -> bool:
        return _matches_any(code, self.fixable) and not _matches_any(code, self.unfixable)

    def fix_allowed(self, code: str, applicability: Applicability) -> bool:
        """Whether --fix may apply a fix of this code and applicability under these settings."""
        if not self.is_fixable(code):
            return False
        return self.effective_applicability(code, applicability) is Applicability.SAFE or (
            self.unsafe_fixes and self.effective_applicability(code, applicability) is Applicability.UNSAFE
        )

    def effective_applicability(self, code: str, applicability: Applicability) -> Applicability:
        if applicability is Applicability.DISPLAY_ONLY:
            return applicability
        if _matches_any(code, self.extend_unsafe_fixes):
            return Applicability.UNSAFE
        if _matches_any(code, self.extend_safe_fixes):
            return Applicability.SAFE
        return applicability

    # --- files ----------------------------------------------------------------------------
    def is_excluded(self, path: Path, walk_root: Optional[Path] = None) -> bool:
        """Is `path` excluded? Name patterns (`venv`, `*_pb2.py`) match the path's components
        below the directory being walked, so a directory named on the command line is checked
        even inside a `venv` (`attnlint check .venv/lib/.../torch`); path patterns
        (`src/generated/`) match the path relative to the project root."""
        rel = _relative_posix(str(path), self.root)
        below = _relative_posix(str(path), walk_root) if walk_root is not None else rel
        parts = [p for p in PurePosixPath(below).parts if p not in (".", "..")]
        for pattern in list(self.exclude) + list(self.extend_exclude):
            pattern = pattern.rstrip("/")
            if "/" not in pattern and any(fnmatch.fnmatchcase(part, pattern) for part in parts):
                return True
            if not rel.startswith("../") and "/" in pattern and _glob_match(rel, pattern):
                return True
        return False


def _matches_any(code: str, patterns: Sequence[str]) -> bool:
    return any(p == "ALL" or code.startswith(p) for p in patterns)


def _expand(selector: str, all_codes: Sequence[str]) -> List[str]:
    if selector == "ALL":
        return list(all_codes)
    hits = [c for c in all_codes if c.startswith(selector)]
    if not hits:
        raise ConfigError(f"unknown rule selector `{selector}`; known codes: {', '.join(all_codes)}")
    return hits


def _relative_posix(path: str, root: Path) -> str:
    try:
        rel = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
    except ValueError:  # another drive on Windows
        rel = path
    return PurePosixPath(Path(rel)).as_posix()


def _glob_match(rel: str, glob: str) -> bool:
    if fnmatch.fnmatchcase(rel, glob):
        return True
    # A pattern without a slash matches the file name anywhere, as ruff and .gitignore do.
    if "/" not in glob and fnmatch.fnmatchcase(PurePosixPath(rel).name, glob):
        return True
    # `dir/` or `dir/**` style prefixes.
    stripped = glob.rstrip("*").rstrip("/")
    return bool(stripped) and "*" not in stripped and (rel == stripped or rel.startswith(stripped + "/"))


def find_config(start: Path) -> Optional[Path]:
    """The closest pyproject.toml with a [tool.attnlint] table, from `start` upwards."""
    start = start.resolve()
    for directory in [start, *start.parents]:
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            try:
                text = candidate.read_text(encoding="utf-8")
            except OSError:
                continue
            try:
                data = tomllib.loads(text)
            except tomllib.TOMLDecodeError as exc:
                # A broken file is an error, not a reason to fall back to another configuration.
                raise ConfigError(f"{candidate}: invalid TOML: {exc}") from exc
            if "attnlint" in data.get("tool", {}):
                return candidate
    return None


def load_settings(config: Optional[Path] = None, cwd: Optional[Path] = None) -> Settings:
    cwd = cwd or Path.cwd()
    path = config if config is not None else find_config(cwd)
    if path is None:
        return Settings(root=cwd)
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    table = data.get("tool", {}).get("attnlint", {})
    # A bare attnlint.toml-style file (no [tool.attnlint]) is accepted with --config too.
    if not table and config is not None and "tool" not in data:
        table = data
    return settings_from_table(table, root=Path(path).resolve().parent, config_path=Path(path))


def settings_from_table(table: Dict[str, Any], root: Path, config_path: Optional[Path] = None) -> Settings:
    from attnlint.rules import registry

    by_name = {rule.name: rule for rule in registry.all_rules()}
    by_code = {rule.code: rule for rule in registry.all_rules()}
    settings = Settings(root=root, config_path=config_path)
    where = str(config_path) if config_path else "[tool.attnlint]"
    for key, value in table.items():
        if key in _LIST_KEYS:
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{where}: `{key}` must be a list of strings")
            setattr(settings, key.replace("-", "_"), list(value))
        elif key in _BOOL_KEYS:
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: `{key}` must be true or false")
            setattr(settings, key.replace("-", "_"), value)
        elif key in _TABLE_KEYS:
            if not isinstance(value, dict) or not all(
                isinstance(v, list) and all(isinstance(c, str) for c in v) for v in value.values()
            ):
                raise ConfigError(f"{where}: `{key}` must be a table of glob = [codes]")
            settings.per_file_ignores = {str(k): list(v) for k, v in value.items()}
        elif key in by_name or key in by_code:
            rule = by_name.get(key) or by_code[key]
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: `[{key}]` must be a table of options")
            options = {k.replace("-", "_"): v for k, v in value.items()}
            unknown = set(options) - set(rule.default_options)
            if unknown:
                raise ConfigError(
                    f"{where}: unknown option(s) for {rule.code} ({rule.name}): "
                    f"{', '.join(sorted(unknown))}; known: "
                    f"{', '.join(sorted(rule.default_options)) or 'none'}"
                )
            try:
                rule(options)  # the rule validates its own option values
            except ValueError as exc:
                raise ConfigError(f"{where}: {exc}") from exc
            settings.rule_options[rule.code] = options
        elif key == "verify":
            continue  # [tool.attnlint.verify]: read (and checked) by attnlint.verify.options
        else:
            raise ConfigError(f"{where}: unknown key `{key}`")
    all_codes = [r.code for r in registry.all_rules()]
    # Validate every code now, so a typo is a config error rather than a silent no-op.
    code_lists = [
        settings.select,
        settings.ignore,
        settings.extend_select,
        settings.fixable,
        settings.unfixable,
        settings.extend_safe_fixes,
        settings.extend_unsafe_fixes,
        *settings.per_file_ignores.values(),
    ]
    for selectors in code_lists:
        for sel in selectors:
            try:
                _expand(sel, all_codes)
            except ConfigError as exc:
                raise ConfigError(f"{where}: {exc}") from exc
    return settings


def with_overrides(settings: Settings, **overrides: Any) -> Settings:
    clean = {k: v for k, v in overrides.items() if v is not None}
    return replace(settings, **clean)
