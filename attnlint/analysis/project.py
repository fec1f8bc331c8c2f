"""Other modules of the checked project: `from .data import PAD_ID, collate` in `train.py`.

A :class:`Project` knows the roots of the checked tree and reads each module of it at most once
per run (parsed and analysed on first import). `analyze_module(module, project=..., path=...)`
resolves the module's imports (relative ones against its own package, absolute ones against the
roots) and sees the imported constants and functions as if they were its own: constants by
value, functions through their summaries. Facts that come from another file carry no syntax
nodes of it (a finding is always reported, and fixed, in the file that holds it).

The engine creates one Project per run (``Project(roots)``) and passes it with each file's path.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Dict, Optional, Sequence

import libcst as cst

from attnlint.analysis.values import Value
from attnlint.parseguard import parse_module

if TYPE_CHECKING:  # pragma: no cover
    from attnlint.analysis import ModuleAnalysis

# Modules larger than this are not read for their importers' facts: what crosses files (pad ids,
# collate functions, configs) lives in small modules, while reading a model's big neighbours once
# per importer cost 5x the run on diffusers.
MAX_BYTES = 30_000
# How many modules are read at once, one importing the next (a checked file's import, and one
# of its imports when a call needs it): deeper, imports are not followed.
_IMPORT_DEPTH = 2
# How long an import found nowhere in the tree is taken as absent before it is looked for again.
_MISS_SECONDS = 5.0


class Project:
    def __init__(self, roots: Sequence[Path]) -> None:
        self.roots = [Path(r).resolve() for r in roots]
        self._analyses: Dict[Path, Optional["ModuleAnalysis"]] = {}
        self._reading: set = set()
        self._stamps: Dict[Path, Optional[tuple]] = {}
        self._resolved: Dict[tuple, tuple] = {}

    # ------------------------------------------------------------------ resolution
    def resolve(self, importer: Optional[Path], module: Optional[str], level: int) -> Optional[Path]:
        """The file of `from <level dots><module> import ...` seen from `importer`, when it is in
        the checked tree. Answers are remembered (every module of a package imports the same
        neighbours, and `torch` from outside the tree): a file found while it still exists, a miss
        for a few seconds, so that a long-lived process (the language server) sees a module that
        appears later."""
        key = (Path(importer).parent if level and importer is not None else None, module, level)
        if key in self._resolved:
            found, when = self._resolved[key]
            if found is not None and found.is_file():
                return found
            if found is None and time.monotonic() - when < _MISS_SECONDS:
                return None
        found = self._resolve(importer, module, level)
        self._resolved[key] = (found, time.monotonic())
        return found

    def _resolve(self, importer: Optional[Path], module: Optional[str], level: int) -> Optional[Path]:
        parts = module.split(".") if module else []
        bases = []
        if level:
            if importer is None:
                return None
            base = Path(importer).resolve().parent
            for _ in range(level - 1):
                base = base.parent
            bases.append(base)
        else:
            bases.extend(self.roots)
            bases.extend(r.parent for r in self.roots)
        for base in bases:
            candidate = base.joinpath(*parts)
            for path in (candidate.with_suffix(".py"), candidate / "__init__.py"):
                if parts and path.is_file() and self._inside(path):
                    return path.resolve()
        return None

    def _inside(self, path: Path) -> bool:
        resolved = path.resolve()
        return any(root == resolved or root in resolved.parents for root in self.roots) or any(
            root.is_file() and resolved.parent == root.parent for root in self.roots
        )

    def analysis_of(self, path: Path) -> Optional["ModuleAnalysis"]:
        """The analysis of another module of the project (read once; None if it cannot be)."""
        from attnlint.analysis import analyze_module
        from attnlint.analysis.selection import NOTHING

        path = path.resolve()
        stamp = _stamp(path)
        if path in self._analyses and self._stamps.get(path) == stamp:
            return self._analyses[path]
        if path in self._reading:
            return None  # an import cycle: the module being read is not known yet
        self._reading.add(path)
        result = None
        try:
            data = path.read_bytes()
            if len(data) <= MAX_BYTES and _safe_for_libcst(data):
                # The module's own imports are registered, and read only when one of its
                # functions or classes is called and calls them (a model file's encoder building
                # its mask with a helper of the package's masking module): the cost of a file
                # stays bounded by what it imports directly and what its calls reach (a package's
                # `__init__` can import hundreds of modules, each importing more). Read for what
                # it lends (constants, summaries on demand): none of its functions is analysed on
                # its own (see selection).
                nested = self if len(self._reading) < _IMPORT_DEPTH else None
                result = analyze_module(parse_module(data), project=nested, path=path, wanted=NOTHING)
        except (OSError, cst.ParserSyntaxError, RecursionError, UnicodeDecodeError, ValueError):
            result = None
        finally:
            self._reading.discard(path)
        self._analyses[path] = result
        # A long-lived process (the language server) sees the file again once it changes.
        self._stamps[path] = stamp
        return result


def _stamp(path: Path) -> Optional[tuple]:
    try:
        info = path.stat()
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_size)


def foreign(value: Value, home=None) -> Value:
    """A value computed in another file, without that file's syntax nodes. `home`: that file's
    summaries, which a partial of one of its functions is called in (Value.function_home)."""
    mask = value.mask
    if mask is not None and mask.buffer_node is not None:
        mask = replace(mask, buffer_node=None)
    padding = value.padding
    if padding is not None and padding.node is not None:
        from attnlint.analysis.names import dotted

        padding = replace(padding, node=None, written_as=dotted(padding.node))
    return value.with_(
        node=None,
        scores=None,
        softmax=None,
        base=None,
        ctor=None,
        mask=mask,
        padding=padding,
        fills=(),
        additive_fill=None,
        elements=tuple(foreign(e) for e in value.elements),
        each=foreign(value.each) if value.each is not None else None,
        entries=tuple((key, foreign(entry)) for key, entry in value.entries),
        shape_of=None,
        function_home=value.function_home or (home if value.bound_call is not None else None),
    )


def imported_names(module: cst.Module):
    """(local name, imported name, from-module, level) of every `from X import a as b`."""
    from attnlint.analysis.names import iter_statements

    for stmt in iter_statements(module.body):
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if not isinstance(small, cst.ImportFrom) or isinstance(small.names, cst.ImportStar):
                continue
            level = len(small.relative)
            source = _dotted(small.module) if small.module is not None else None
            for alias in small.names:
                name = _dotted(alias.name)
                if name is None:
                    continue
                local = name
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    local = alias.asname.name.value
                yield local, name, source, level


def _dotted(node) -> Optional[str]:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        left = _dotted(node.value)
        return None if left is None else f"{left}.{node.attr.value}"
    return None


def _safe_for_libcst(data: bytes) -> bool:
    """An imported file gets the checked files' guard: LibCST's native parser can take the
    process down on text CPython refuses at its limits, or on very long operator chains."""
    from attnlint.parseguard import chain_too_long, cpython_verdict

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False  # a coding cookie other than UTF-8: not worth the risk for an import
    return not cpython_verdict(text).at_limit and not chain_too_long(text)
