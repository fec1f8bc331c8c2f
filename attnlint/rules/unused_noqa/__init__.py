"""ATN100 unused-noqa (ruff's RUF100).

Self-contained: the detection and the fix live in :mod:`attnlint.noqa` (they read comments, not
the tree), and the engine runs them after the other rules, because "suppresses nothing" is only
known once every other rule has reported. This class gives the rule its code, name, page and
examples, so that it is selected, listed, documented and tested like every other rule.
"""

from __future__ import annotations

from attnlint.diagnostics import Applicability
from attnlint.noqa import UNUSED_NOQA_CODE, UNUSED_NOQA_NAME
from attnlint.rules.base import FixAvailability, Invalid, Rule, RuleContext, Valid


class UnusedNoqa(Rule):
    """
    ## What it does
    Checks for `# noqa: ATN...` directives that suppress nothing: the code names no attnlint rule
    (`ATN999`), is listed twice, or its rule ran on the statement and reported nothing there.

    Only attnlint's own codes are judged. Other tools' codes (`# noqa: E501`) and a blanket
    `# noqa` are left alone, since attnlint cannot know what they are for; so is the code of a rule
    that did not run on the file (not selected, or switched off by `per-file-ignores`), so that
    running a subset of the rules never strips the others' suppressions.

    ## Why is this bad?
    A suppression that suppresses nothing is noise that hides the next real finding on that line:
    the bug it was added for has been fixed, or the code was mistyped and never worked. Removing
    them keeps every remaining `noqa` meaningful.

    ## Fix safety
    The fix is safe: it removes only attnlint codes that silenced nothing (the whole comment when
    nothing else is left in it), so no finding appears or disappears and the code is unchanged.
    """

    code = UNUSED_NOQA_CODE
    name = UNUSED_NOQA_NAME
    summary = "a `# noqa` directive names attnlint codes that suppress nothing"
    fix_availability = FixAvailability.ALWAYS
    fix_applicability = Applicability.SAFE
    # Only a file with a `noqa:` naming an ATN code can hold a finding (a plain literal first, so
    # that the pre-filter can skip other files with a substring test).
    triggers = (r"noqa\s*:[^\n]*ATN",)

    def check(self, ctx: RuleContext) -> None:
        """Nothing to do on the tree: the engine calls :func:`attnlint.noqa.unused_noqa` once the
        other rules have reported."""

    VALID = [
        Valid("x = 1  # noqa: E501\n"),
        Valid("x = 1  # noqa\n"),
        Valid("x = 1  # type: ignore  # noqa: E501, W291\n"),
        Valid('x = "# noqa: ATN999"\n'),
        # ATN101 did not run (only ATN100 is selected here): its code is not judged.
        Valid("x = 1  # noqa: ATN101\n"),
        Valid("x = 1  # ruff: ignore[E501]\n"),
    ]
    INVALID = [
        Invalid("x = 1  # noqa: ATN999\n", fixed="x = 1\n", line=1, column=7, page=True),
        Invalid("x = 1  # noqa: E501, ATN999\n", fixed="x = 1  # noqa: E501\n"),
        Invalid("x = 1  # noqa: ATN999 left over from the old mask\n", fixed="x = 1\n"),
        Invalid("x = 1  # noqa:ATN998;ATN997\n", fixed="x = 1\n"),
        Invalid(
            "x = 1  # noqa: ATN996 # pylint: disable=invalid-name\n", fixed="x = 1  # pylint: disable=invalid-name\n"
        ),
        Invalid("def f():\n    # noqa: ATN999\n    return 1\n", fixed="def f():\n\n    return 1\n"),
    ]
