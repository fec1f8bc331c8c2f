"""ATN201 cross-entropy-ignore-index."""

from __future__ import annotations

import libcst as cst

from attnlint.diagnostics import Applicability
from attnlint.fixers.keyword import set_keyword
from attnlint.rules.base import FixAvailability, Invalid, Rule, RuleContext, Valid


class CrossEntropyIgnoreIndex(Rule):
    """
    ## What it does
    Checks for `nn.CrossEntropyLoss` / `F.cross_entropy` on targets padded with a value that its
    `ignore_index` does not match: `pad_sequence(targets, padding_value=0)` (or pad_sequence's
    default 0) with the default `ignore_index=-100`, or `padding_value=-100` with
    `ignore_index=0`. A loss built in `__init__` and called in another method is followed.

    ## Why is this bad?
    Padding positions are then trained as if they were real targets: the model learns to predict
    the pad token after every short sequence, the loss is diluted by easy predictions, and the
    gradients of the embeddings are polluted. Nothing fails; the loss just looks better than it is.

    Not reported: padding with -100 and the default `ignore_index`; targets rewritten to the
    ignore value before the loss (`targets[targets == pad] = -100`, `masked_fill`); padding
    values the analysis cannot read.

    ## Example
    ```python
    targets = pad_sequence(targets, batch_first=True)  # pads with 0
    loss = F.cross_entropy(logits.view(-1, vocab), targets.view(-1))
    ```

    ## Use instead
    ```python
    targets = pad_sequence(targets, batch_first=True)
    loss = F.cross_entropy(logits.view(-1, vocab), targets.view(-1), ignore_index=0)
    ```

    ## Fix safety
    The fix is unsafe: it changes the loss (padding stops contributing). If the padding value is
    also a real class id, ignoring it drops real targets: pad with -100 instead. With no padding
    in a batch the fixed loss is bit-identical.
    """

    code = "ATN201"
    name = "cross-entropy-ignore-index"
    summary = "cross-entropy `ignore_index` does not match the padding value of its targets"
    fix_availability = FixAvailability.ALWAYS
    fix_applicability = Applicability.UNSAFE
    triggers = ("pad_sequence",)

    def check(self, ctx: RuleContext) -> None:
        for site in ctx.analysis.sites("loss_sites"):
            targets = site.targets
            if not targets.get_extra("padded"):
                continue
            pad = targets.get_extra("padding_value")
            if pad is None or site.ignore_index is None or float(pad) == float(site.ignore_index):
                continue
            pad_node = targets.get_extra("padding_node")
            # A named pad id stays a name; a literal becomes an int (ignore_index must be one).
            named = pad_node is not None and not isinstance(pad_node, (cst.Integer, cst.Float, cst.UnaryOperation))
            pad_code = ctx.code(pad_node) if named else _number(pad)
            where = "the default ignore_index=-100" if site.ignore_index_node is None else f"ignore_index={site.ignore_index}"
            fix = None
            if site.configured_at is not None:
                fix = set_keyword(site.configured_at, "ignore_index", pad_code,
                                  f"Set `ignore_index={pad_code}` (the padding value)")
            ctx.report(
                site.call,
                f"targets are padded with {_number(pad)} but the loss uses {where}: "
                "padding positions are trained as real targets",
                fix=fix,
            )

    VALID = [
        Valid(
            """
            import torch
            from torch.nn.utils.rnn import pad_sequence
            targets = pad_sequence(ts, batch_first=True, padding_value=-100)
            loss = torch.nn.CrossEntropyLoss()(logits.view(-1, 5), targets.view(-1))
            """
        ),
        Valid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            targets = pad_sequence(ts, batch_first=True)
            loss = F.cross_entropy(logits.view(-1, V), targets.view(-1), ignore_index=0)
            """
        ),
        # Targets rewritten to the ignore value first.
        Valid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            targets = pad_sequence(ts, batch_first=True, padding_value=0)
            targets[targets == 0] = -100
            loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
            """
        ),
        Valid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            targets = pad_sequence(ts, batch_first=True)
            targets = targets.masked_fill(targets == 0, -100)
            loss = F.cross_entropy(logits.view(-1, V), targets.view(-1))
            """
        ),
        # No padding at all.
        Valid(
            """
            import torch.nn.functional as F
            def step(logits, targets):
                return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
            """
        ),
        # Padding value unknown: silent.
        Valid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            targets = pad_sequence(ts, batch_first=True, padding_value=tokenizer.pad_token_id)
            loss = F.cross_entropy(logits.view(-1, V), targets.view(-1))
            """
        ),
        # Loss object in __init__ with matching ignore_index.
        Valid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            PAD = 0
            class Trainer:
                def __init__(self):
                    self.criterion = nn.CrossEntropyLoss(ignore_index=PAD)
                def step(self, logits, ts):
                    targets = pad_sequence(ts, batch_first=True, padding_value=PAD)
                    return self.criterion(logits.view(-1, 5), targets.view(-1))
            """
        ),
        # Padded inputs, unpadded targets.
        Valid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            inputs = pad_sequence(xs, batch_first=True)
            loss = F.cross_entropy(model(inputs), labels)
            """
        ),
        Valid(
            """
            import torch
            from torch.nn.utils.rnn import pad_sequence
            targets = pad_sequence(ts, batch_first=True, padding_value=-1)
            loss = torch.nn.functional.cross_entropy(logits.view(-1, 5), targets.view(-1), ignore_index=-1)
            """
        ),
        # torch.where rewrite.
        Valid(
            """
            import torch
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            targets = pad_sequence(ts, batch_first=True)
            targets = torch.where(targets == 0, -100, targets)
            loss = F.cross_entropy(logits.view(-1, V), targets.view(-1))
            """
        ),
    ]

    INVALID = [
        # The seed article's trap: pad_sequence's default 0 with the default ignore_index.
        Invalid(
            """
            import torch
            from torch.nn.utils.rnn import pad_sequence
            padded_targets = pad_sequence(targets, batch_first=True)
            loss_fn = torch.nn.CrossEntropyLoss()
            loss = loss_fn(padded_logits.view(-1, 5), padded_targets.view(-1))
            """,
            fixed="""
            import torch
            from torch.nn.utils.rnn import pad_sequence
            padded_targets = pad_sequence(targets, batch_first=True)
            loss_fn = torch.nn.CrossEntropyLoss(ignore_index=0)
            loss = loss_fn(padded_logits.view(-1, 5), padded_targets.view(-1))
            """,
            line=5,
            column=7,
        ),
        # padding_value=-100 with ignore_index=0.
        Invalid(
            """
            import torch
            from torch.nn.utils.rnn import pad_sequence
            padded_targets = pad_sequence(targets, batch_first=True, padding_value=-100)
            loss_fn = torch.nn.CrossEntropyLoss(ignore_index=0)
            loss = loss_fn(padded_logits.view(-1, 5), padded_targets.view(-1))
            """,
            fixed="""
            import torch
            from torch.nn.utils.rnn import pad_sequence
            padded_targets = pad_sequence(targets, batch_first=True, padding_value=-100)
            loss_fn = torch.nn.CrossEntropyLoss(ignore_index=-100)
            loss = loss_fn(padded_logits.view(-1, 5), padded_targets.view(-1))
            """,
        ),
        # F.cross_entropy with an explicit padding value.
        Invalid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            targets = pad_sequence(ts, batch_first=True, padding_value=0)
            loss = F.cross_entropy(logits.view(-1, V), targets.view(-1))
            """,
            fixed="""
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            targets = pad_sequence(ts, batch_first=True, padding_value=0)
            loss = F.cross_entropy(logits.view(-1, V), targets.view(-1), ignore_index=0)
            """,
        ),
        # A pad id constant; the loss built in __init__ and called in another method.
        Invalid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            PAD_IDX = 1
            class Trainer:
                def __init__(self):
                    self.criterion = nn.CrossEntropyLoss()
                def step(self, logits, ts):
                    targets = pad_sequence(ts, batch_first=True, padding_value=PAD_IDX)
                    return self.criterion(logits.reshape(-1, 5), targets.reshape(-1))
            """,
            fixed="""
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            PAD_IDX = 1
            class Trainer:
                def __init__(self):
                    self.criterion = nn.CrossEntropyLoss(ignore_index=PAD_IDX)
                def step(self, logits, ts):
                    targets = pad_sequence(ts, batch_first=True, padding_value=PAD_IDX)
                    return self.criterion(logits.reshape(-1, 5), targets.reshape(-1))
            """,
        ),
        # Wrong explicit ignore_index on F.cross_entropy.
        Invalid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            targets = pad_sequence(ts, True, -1)
            loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=0)
            """,
            fixed="""
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            targets = pad_sequence(ts, True, -1)
            loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-1)
            """,
        ),
        # Inline loss module.
        Invalid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            def step(logits, ts):
                targets = pad_sequence(ts, batch_first=True)
                return nn.CrossEntropyLoss(reduction="sum")(logits.view(-1, 5), targets.view(-1))
            """,
            fixed="""
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            def step(logits, ts):
                targets = pad_sequence(ts, batch_first=True)
                return nn.CrossEntropyLoss(reduction="sum", ignore_index=0)(logits.view(-1, 5), targets.view(-1))
            """,
        ),
        # Float padding value from pad_sequence.
        Invalid(
            """
            import torch.nn.functional as F
            from torch.nn.utils import rnn
            targets = rnn.pad_sequence(ts, batch_first=True, padding_value=0.0)
            loss = F.cross_entropy(logits.view(-1, V), targets.long().view(-1))
            """,
            fixed="""
            import torch.nn.functional as F
            from torch.nn.utils import rnn
            targets = rnn.pad_sequence(ts, batch_first=True, padding_value=0.0)
            loss = F.cross_entropy(logits.view(-1, V), targets.long().view(-1), ignore_index=0)
            """,
        ),
    ]


def _number(value) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)
