"""What a rule is.

A rule is one class in one module: its code, its kebab-case name, the page a user reads (the class
docstring, in ruff's sections), its valid and invalid examples (run as tests, Fixit's way), and a
``check`` that asks the shared analysis questions and reports. Rules never walk the tree to derive
tensor facts themselves: if a fact is missing, it belongs in :mod:`attnlint.analysis`.
"""

from __future__ import annotations

import enum
import inspect
import textwrap
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Dict, List, Mapping, Optional, Sequence, Tuple


from attnlint.diagnostics import DOCS_URL, Applicability

# Re-exported: the engine and older plugins import the fix types from here.
from attnlint.edits import InsertBefore, NodeFix, Replacement  # noqa: F401

if TYPE_CHECKING:  # pragma: no cover
    # Annotations only: a warm run (answered from the cache) imports the registry, never LibCST.
    import libcst as cst
    from attnlint.analysis import ModuleAnalysis


class FixAvailability(str, enum.Enum):
    ALWAYS = "always"
    SOMETIMES = "sometimes"
    NONE = "not"


@dataclass(frozen=True)
class Valid:
    """Code on which the rule must stay silent."""

    code: str
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def source(self) -> str:
        return _dedent(self.code)


@dataclass(frozen=True)
class Invalid:
    """Code the rule must report.

    ``line``/``column`` (1-based line, 0-based column, as LibCST) pin the first finding when given.
    ``fixed`` is the whole source after this rule's fixes (unsafe ones included); ``None`` means the
    example has no fix.
    """

    code: str
    fixed: Optional[str] = None
    line: Optional[int] = None
    column: Optional[int] = None
    options: Mapping[str, Any] = field(default_factory=dict)
    # The example the rule's page shows under *Example* (and its fix under *Use instead*): exactly
    # one invalid example of each rule is flagged, so a page only shows code the rule reports.
    page: bool = False

    @property
    def source(self) -> str:
        return _dedent(self.code)

    @property
    def fixed_source(self) -> Optional[str]:
        return None if self.fixed is None else _dedent(self.fixed)


def _dedent(code: str) -> str:
    code = textwrap.dedent(code)
    if code.startswith("\n"):
        code = code[1:]
    return code


@dataclass
class Report:
    node: cst.CSTNode
    message: str
    fix: Optional[NodeFix]


class RuleContext:
    """What a rule sees of one file: the module, the shared analysis, and a way to report."""

    def __init__(self, module: cst.Module, analysis: "ModuleAnalysis") -> None:
        self.module = module
        self.analysis = analysis
        self.reports: List[Report] = []
        self._report_at: Dict[int, int] = {}  # id(node) -> index in reports

    def report(self, node: cst.CSTNode, message: str, fix: Optional[NodeFix] = None) -> None:
        """Report `node`; a node is one place in the code, so it is reported once.

        The analysis evaluates some nodes more than once (a comprehension's element once per
        element of `(q, k, v)`, a loop body once per pass): each evaluation may report it. The first
        report stands; its fix survives only if every later report of the node proposes the same
        edit, since a fix right for one element may be wrong for another.
        """
        index = self._report_at.get(id(node))
        if index is None:
            self._report_at[id(node)] = len(self.reports)
            self.reports.append(Report(node, message, fix))
            return
        first = self.reports[index]
        if first.fix is not None and not self._same_fix(first.fix, fix):
            self.reports[index] = Report(first.node, first.message, None)

    def _same_fix(self, a: NodeFix, b: Optional[NodeFix]) -> bool:
        if b is None or a.message != b.message or len(a.changes) != len(b.changes):
            return False
        return all(self._change_text(x) == self._change_text(y) for x, y in zip(a.changes, b.changes))

    def _change_text(self, change: "Replacement | InsertBefore") -> Tuple[str, int, str]:
        if isinstance(change, Replacement):
            return ("replace", id(change.old), self.module.code_for_node(change.new))
        return ("insert", id(change.statement), change.code)

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    # One line, for `attnlint rules` and SARIF's shortDescription.
    summary: ClassVar[str]
    fix_availability: ClassVar[FixAvailability] = FixAvailability.NONE
    fix_applicability: ClassVar[Optional[Applicability]] = None
    # Regular expressions: a file in which none matches cannot hold a finding; it is not parsed.
    # They also say which definitions the analysis reads (see analysis.selection): the text of
    # a helper that builds what the rule judges (`torch.where(keep, 0, -inf)`) belongs here.
    triggers: ClassVar[Tuple[str, ...]] = ()
    # Regular expressions for what must stand in the file where a finding of the rule is
    # reported, when that is narrower than what the triggers name (the attention a mask helper
    # feeds): a file that matches a trigger but none of these holds no finding of the rule, and
    # is not parsed for it. Empty: the triggers alone decide.
    reported_where: ClassVar[Tuple[str, ...]] = ()
    # Per-rule options and their defaults; `[tool.attnlint.<rule-name>]` overrides them.
    default_options: ClassVar[Dict[str, Any]] = {}
    # For options that take one of a few values: the values allowed.
    option_choices: ClassVar[Dict[str, Tuple[Any, ...]]] = {}
    VALID: ClassVar[Sequence[Valid]] = ()
    INVALID: ClassVar[Sequence[Invalid]] = ()
    # The verification recipe that proves this rule's fix: a module of `attnlint.verify.recipes`
    # (None: the rule has no recipe). The recipe map is derived from this attribute.
    recipe: ClassVar[Optional[str]] = None

    def __init__(self, options: Optional[Mapping[str, Any]] = None) -> None:
        unknown = set(options or {}) - set(self.default_options)
        if unknown:
            raise ValueError(
                f"unknown option(s) for {self.code} ({self.name}): {', '.join(sorted(unknown))}; "
                f"known: {', '.join(sorted(self.default_options)) or 'none'}"
            )
        self.options = {**self.default_options, **(options or {})}
        for name, allowed in self.option_choices.items():
            if self.options[name] not in allowed:
                raise ValueError(
                    f"option `{name.replace('_', '-')}` of {self.code} ({self.name}) must be one of "
                    f"{', '.join(repr(a) for a in allowed)}, not {self.options[name]!r}"
                )

    def check(self, ctx: RuleContext) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    # --- documentation -------------------------------------------------------------------
    @classmethod
    def url(cls) -> str:
        return DOCS_URL.format(name=cls.name)

    @classmethod
    def page(cls) -> str:
        """The rule's documentation page body (markdown): the class docstring's sections, with
        *Example* and *Use instead* rendered from the flagged invalid example and its fix, placed
        before *Fix safety* (ruff's order)."""
        text = inspect.cleandoc(cls.__doc__ or "")
        example = cls.page_example()
        if example is None:
            return text
        blocks = f"## Example\n```python\n{example.source.rstrip()}\n```\n"
        if example.fixed_source is not None:
            blocks += f"\n## Use instead\n```python\n{example.fixed_source.rstrip()}\n```\n"
        marker = "## Fix safety"
        if marker in text:
            before, after = text.split(marker, 1)
            return f"{before.rstrip()}\n\n{blocks}\n{marker}{after}"
        return f"{text.rstrip()}\n\n{blocks}"

    @classmethod
    def page_example(cls) -> Optional[Invalid]:
        """The invalid example flagged ``page=True``: one per rule (tests/test_docs.py checks every
        registered rule has it); None for a rule with none (a plugin's, a test's)."""
        flagged = [example for example in cls.INVALID if example.page]
        if len(flagged) > 1:
            raise ValueError(f"{cls.code} flags {len(flagged)} INVALID examples with page=True; flag one")
        return flagged[0] if flagged else None

    @classmethod
    def fix_label(cls) -> str:
        """How `attnlint rules` and the README's table describe the fix: `always (safe)`, `none`, ..."""
        if cls.fix_applicability is None:
            return "none"
        return f"{cls.fix_availability.value} ({cls.fix_applicability.value})"

    @classmethod
    def fix_sentence(cls) -> str:
        return f"Fix is {cls.fix_availability.value} available."
