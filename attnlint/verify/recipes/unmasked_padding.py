"""Recipe for ATN202 unmasked-padding: attention over a padded batch without the padding mask.

The bug is silent: the module accepts a ``key_padding_mask`` (or ``attn_mask``, ...) and never
passes it on, so every real token also attends to the padded slots. The fix passes the mask on in
the callee's own convention (``key_padding_mask=key_padding_mask`` to ``nn.MultiheadAttention``,
``attn_mask=attn_mask`` to SDPA).

Witness (docs/verify.md: the bug needs padded sequences with real values in the
padded slots): a batch of lengths {T, T-2, 1, 0} padded to T = 7, on the right and on the left, with
large random garbage in the padded slots, drawn twice. Evidence, per device and dtype:

1. ``witness_original_wrong`` -- the original runs, and on the real tokens it is outside
   FlashAttention's bound of the float64 reference (its real outputs also move with the garbage).
2. ``fixed_ignores_padding_garbage`` -- the fixed real outputs are ``torch.equal`` across the two
   garbage draws, on both sides.
3. ``fixed_matches_float64_naive_kernel`` / ``fixed_matches_float64_sdpa`` -- on the real tokens,
   within FlashAttention's bound of the float64 reference with a correct bool mask (see
   :mod:`attnlint.verify.recipes._masking` for how the reference is built).
4. ``fixed_matches_unpadded_original`` -- padding invariance: each non-empty sequence run alone,
   unpadded, through the *original* code in float64 (where the original was right) gives the fixed
   code's real outputs.
5. ``fixed_gradient_matches_float64_reference`` -- the gradient w.r.t. the input at the real tokens
   (upstream gradient zero on padded rows).
6. ``no_padding_bit_identical`` -- with no padding the old code was right: ``torch.equal``. Run with
   autograd on, as in training; ``no_padding_inference_max_diff`` records the ``torch.no_grad()``
   difference, where ``nn.MultiheadAttention`` takes its native fast path, whose masked and unmasked
   variants differ in the last bit.

Outputs of an empty sequence are not judged (it has no real token); ``*_fixed_nan_rows`` records
them: ``nn.MultiheadAttention`` returns NaN there (a matter for ATN203), SDPA returns 0.

Params: ``init_kwargs``, ``mask_arg``, ``mask_format`` (key_padding | attention_mask | keep |
sdpa_keep), ``causal``, ``d_in``, and for hand-written attention those of
:mod:`attnlint.verify.recipes._score_softmax` (``projections``, ``heads``, ``out_proj``, ``scale``).
Runs only inside the verification child process.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping

from attnlint.verify.recipes._masking import Context, padded_attention_checks, run_recipe

RULE_CODE = "ATN202"


def run(request: Mapping[str, Any]) -> List[Dict[str, Any]]:
    return run_recipe(request, RULE_CODE, _verify_on)


def _verify_on(ctx: Context) -> None:
    padded_attention_checks(ctx, unpadded_reference=True, no_padding_identical=True)
