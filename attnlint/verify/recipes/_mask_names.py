"""Mask-argument names and the witness format each implies: read from the linter's table.

Torch-free (the parent uses it too). The linter (:mod:`attnlint.analysis.masks`) owns the table of
mask parameter names and their conventions; the verifier never keeps its own, so the two cannot
disagree (they once did on ``padding_mask``, which the linter rightly treats as convention-free).
"""

from __future__ import annotations

from typing import Dict, Optional


def mask_format_for_name(name: str) -> Optional[str]:
    """The witness format a mask parameter's *name* implies, from the linter's own table
    (:mod:`attnlint.analysis.masks`), or None when the name does not tell.

    The linter and the verifier must agree: a name the linter treats as convention-free
    (``padding_mask``, ``attn_mask``) is convention-free here too, and the convention then comes
    from what the analysis saw the code do with the mask (``params["mask_format"]``, set by the
    parent from the entry's facts) or from the user.
    """
    from attnlint.analysis import masks
    from attnlint.analysis.values import ATTEND, MASKED

    facts = masks.from_param(name)
    if facts is None:
        return None
    if facts.convention == MASKED and facts.dtype == "bool":
        return "key_padding"
    if facts.convention == ATTEND:
        return "attention_mask"
    return None


def known_mask_names() -> Dict[str, str]:
    from attnlint.analysis import masks

    names = dict.fromkeys(masks._PARAM_MASKS)  # noqa: SLF001 - the one table, read, never copied
    return {n: f for n in names if (f := mask_format_for_name(n)) is not None}
