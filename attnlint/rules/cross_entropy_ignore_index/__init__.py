"""ATN201 cross-entropy-ignore-index."""

from __future__ import annotations

import libcst as cst

from attnlint.analysis import masks
from attnlint.diagnostics import Applicability
from attnlint.fixers.keyword import set_keyword
from attnlint.rules.base import FixAvailability, Invalid, Rule, RuleContext, Valid


class CrossEntropyIgnoreIndex(Rule):
    """
    ## What it does
    Checks for `nn.CrossEntropyLoss` / `F.cross_entropy` on targets padded with a value that its
    `ignore_index` does not match: `pad_sequence(targets, padding_value=0)` (or pad_sequence's
    default 0) with the default `ignore_index=-100`, or `padding_value=-100` with
    `ignore_index=0`, or labels padded with -100 against an `ignore_index` that names the pad
    token's id (`ignore_index=pad_id`, `vocab.pad_id`: a token id is never negative). A loss built in `__init__` and called in another method is followed, and so
    is padding built by hand (`ids + [pad_id] * (n - len(ids))`, rows appended in a loop, a
    tokenizer's `pad_token_id`, a dataclass config's default), by a `collate_fn` given to a
    `DataLoader` (also one bound with `functools.partial(collate, pad_id=pad)`, or the partial or
    closure a factory such as `make_collate_fn(tokenizer)` returns, in this file or another), a
    collator instance built at the top level of a script, or in a helper whose result reaches a
    loss in another function.

    Pad ids are read where they come from: a vocabulary (`vocab["<pad>"]`, a dict literal,
    `{t: i for i, t in enumerate(specials)}`, `specials.index("<pad>")`), a class or instance
    attribute, a command-line option's default, the default of a parameter the call leaves out
    (`def collate(batch, pad_id=Config.pad_token_id)` called by a DataLoader with the batch
    alone), a tensor of zeros (or `torch.full(size, pad)`) filled row by row,
    `torch.cat` of a padded part, a minibatch of whole rows picked by integer position
    (`targets[torch.randint(0, n, (b,))]`, a `torch.randperm` slice), a tokenizer called with `padding=True` (its `input_ids`), and
    through dict batches (`{"input_ids": ids, "labels": labels}`, `batch["labels"]`,
    `{k: v.to(device) for k, v in batch.items()}`), collator instances given to a DataLoader,
    and a dataset class's `__getitem__` stacked by the DataLoader's default collate. A loader
    (`def evaluate(model, loader)`) or one batch (`def train_step(model, batch)`) handed in from
    outside is one of the module's collate batches when the module defines exactly one collate
    function or method; a `model` handed in and called on a padded batch (or a parameter named for
    the class: `dalle` for `DALLE`, `encoder` for `SpeechEncoder`) is the module's one root
    nn.Module (the one no other class here builds). A pad id whose number cannot be read but that is a token id
    (`tokenizer.pad_token_id`, a vocabulary lookup, an attribute named as one on an object the
    analysis cannot see: `vocab.pad_index`) is an index into the vocabulary, so it never
    equals a negative `ignore_index` such as the default -100: that is reported too.

    It is reported where the loss is configured (the `nn.CrossEntropyLoss(...)` call, where the
    fix writes `ignore_index`) when that is in the same file, once however many calls use it (a
    criterion shared by the training and the evaluation loops); otherwise at the loss call.

    ## Why is this bad?
    Padding positions are then trained as if they were real targets: the model learns to predict
    the pad token after every short sequence, the loss is diluted by easy predictions, and the
    gradients of the embeddings are polluted. Nothing fails; the loss just looks better than it is.

    Not reported: padding with -100 and the default `ignore_index`; targets rewritten to the
    ignore value before the loss (`targets[targets == pad] = -100`, `masked_fill`); padding
    values the analysis cannot read and that are not token ids; a token id against a
    non-negative `ignore_index` it might equal.

    ## Fix safety
    The fix is unsafe: it changes the loss (padding stops contributing). If the padding value is
    also a real class id, ignoring it drops real targets: pad with -100 instead. With no padding
    in a batch the fixed loss is bit-identical. No fix is offered when the pad id is not a number
    or a module constant (`tokenizer.pad_token_id` may not be in scope where the loss is built),
    or when `ignore_index` is read from an expression (`self.ignore_index`: its caller sets it).
    """

    code = "ATN201"
    name = "cross-entropy-ignore-index"
    summary = "cross-entropy `ignore_index` does not match the padding value of its targets"
    fix_availability = FixAvailability.SOMETIMES
    fix_applicability = Applicability.UNSAFE
    # A finding needs a loss; the padding may come from anywhere (pad_sequence, list padding,
    # a tokenizer, a collate function).
    triggers = (r"cross_entropy|CrossEntropyLoss",)
    recipe = "cross_entropy_ignore_index"

    def check(self, ctx: RuleContext) -> None:
        reported = set()
        for site in ctx.analysis.sites("loss_sites"):
            targets = site.targets
            if not targets.padded or site.reduction not in ("mean", "sum") or site.weighted:
                continue  # per-token losses or class weights: the padding may be handled there
            pad = targets.padding.value
            if site.ignore_index is None:
                if site.ignores_token_id and pad is not None and pad < 0:
                    # Padded with -100 (the labels' pad), ignoring the pad token's id instead: a
                    # token id is never negative, so the padding is trained and that token is not.
                    ctx.report(
                        site.call,
                        f"targets are padded with {_number(pad)} but the loss uses "
                        f"ignore_index={ctx.code(site.ignore_index_node)} (a token id): padding positions are "
                        "trained as real targets, and targets equal to that id are ignored",
                    )
                continue
            pad_node = targets.padding.node
            # A module-level pad id stays a name (it is in scope wherever the loss is built); a
            # local or a literal becomes the int (ignore_index must be one).
            named = isinstance(pad_node, cst.Name) and pad_node.value in ctx.analysis.constants
            if pad is None:
                # A token id whose number is unknown (`tokenizer.pad_token_id`) is still an index
                # into the vocabulary: never a negative ignore_index such as the default -100.
                written = ctx.code(pad_node) if pad_node is not None else targets.padding.written_as
                if not targets.padding.token_id or site.ignore_index >= 0 or written is None:
                    continue
                where_written = "" if pad_node is not None else " in another file"
                padded_with = f"`{written}`{where_written} (a token id)"
                pad_code = ctx.code(pad_node) if named else None
            elif float(pad) == float(site.ignore_index):
                continue
            else:
                padded_with = _number(pad)
                pad_code = ctx.code(pad_node) if named else _number(pad)
            where = (
                "the default ignore_index=-100"
                if site.ignore_index_node is None
                else f"ignore_index={site.ignore_index}"
            )
            fix = None
            # The fix sets ignore_index where the loss is configured; one that reads an
            # expression (`ignore_index=self.ignore_index`) is configured further up: no fix.
            ignore_node = site.ignore_index_node
            configurable = (
                ignore_node is None
                or masks.number(ignore_node) is not None
                or (isinstance(ignore_node, cst.Name) and ignore_node.value in ctx.analysis.constants)
            )
            if site.configured_at is not None and pad_code is not None and configurable:
                fix = set_keyword(
                    site.configured_at, "ignore_index", pad_code, f"Set `ignore_index={pad_code}` (the padding value)"
                )
            # Reported where the loss is configured, when that is in this file (the criterion
            # built once with the wrong `ignore_index`, or without one, and called in the
            # training and the evaluation loops): once, where the fix writes.
            at = site.call
            if site.configured_at is not None and ctx.analysis.parent_of(site.configured_at) is not None:
                at = site.configured_at
            if id(at) in reported:
                continue
            reported.add(id(at))
            ctx.report(
                at,
                f"targets are padded with {padded_with} but the loss uses {where}: "
                "padding positions are trained as real targets",
                fix=fix,
            )

    VALID = [
        # The labels stored into the encoding are rewritten to -100 at the pad id first.
        Valid(
            """
            import torch.nn as nn
            from torch.utils.data import DataLoader


            class PairCollator:
                def __init__(self, tokenizer):
                    self.tokenizer = tokenizer

                def __call__(self, rows):
                    enc = self.tokenizer([r["q"] for r in rows], padding=True, return_tensors="pt")
                    out = self.tokenizer([r["a"] for r in rows], padding=True, return_tensors="pt")
                    labels = out["input_ids"]
                    labels[labels == self.tokenizer.pad_token_id] = -100
                    enc["labels"] = labels
                    return enc


            class Loop:
                def __init__(self, net, tokenizer):
                    self.net = net
                    self.tokenizer = tokenizer
                    self.ce = nn.CrossEntropyLoss()

                def loss(self, batch):
                    labels = batch.pop("labels")
                    logits = self.net(**batch).logits
                    return self.ce(logits.flatten(0, 1), labels.flatten())

                def run(self, rows):
                    for batch in DataLoader(rows, batch_size=4, collate_fn=PairCollator(self.tokenizer)):
                        self.loss(batch).backward()
            """
        ),
        # The vocabulary class puts "<pad>" at 2, and the loss ignores 2.
        Valid(
            """
            import torch
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence

            SPECIAL = ["<s>", "</s>", "<pad>"]


            class Lexicon:
                def __init__(self, words):
                    self.itos = SPECIAL + sorted(set(words) - set(SPECIAL))
                    self.stoi = {w: i for i, w in enumerate(self.itos)}

                def __getitem__(self, word):
                    return self.stoi.get(word, len(self.itos))


            def batch_targets(lex, sentences):
                rows = [torch.tensor([lex[w] for w in s]) for s in sentences]
                return pad_sequence(rows, batch_first=True, padding_value=lex["<pad>"])


            def loss_of(net, lex, sentences):
                targets = batch_targets(lex, sentences)
                return F.cross_entropy(net(targets).transpose(1, 2), targets, ignore_index=2)
            """
        ),
        # Two classes here look tokens up: which one is handed in is unknown, and a token id of
        # unknown number may be 0.
        Valid(
            """
            import torch
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence

            SPECIAL = ["<s>", "</s>", "<pad>"]


            class Lexicon:
                def __init__(self, words):
                    self.itos = SPECIAL + sorted(set(words) - set(SPECIAL))
                    self.stoi = {w: i for i, w in enumerate(self.itos)}

                def __getitem__(self, word):
                    return self.stoi.get(word, len(self.itos))


            class Labels:
                def __init__(self, names):
                    self.names = list(names)

                def __getitem__(self, name):
                    return self.names.index(name)


            def batch_targets(lex, sentences):
                rows = [torch.tensor([lex[w] for w in s]) for s in sentences]
                return pad_sequence(rows, batch_first=True, padding_value=lex["<pad>"])


            def loss_of(net, lex, sentences):
                targets = batch_targets(lex, sentences)
                return F.cross_entropy(net(targets).transpose(1, 2), targets, ignore_index=0)
            """
        ),
        # The module's one dataset pads its targets with -100: a loader handed in stacks them.
        Valid(
            """
            import torch
            import torch.nn.functional as F


            class Clips(torch.utils.data.Dataset):
                def __getitem__(self, i):
                    frames, labels = self.items[i]
                    gap = self.width - len(labels)
                    return torch.tensor(frames + [0] * gap), torch.tensor(labels + [-100] * gap)


            def fit(net, loader):
                for frames, labels in loader:
                    F.cross_entropy(net(frames).transpose(1, 2), labels).backward()
            """
        ),
        # The same dataset padding with 0, but a loader of the module collates its own way
        # (it may rewrite the padding): a loader handed in is not taken for the dataset's.
        Valid(
            """
            import torch
            import torch.nn.functional as F
            from torch.utils.data import DataLoader


            class Clips(torch.utils.data.Dataset):
                def __getitem__(self, i):
                    frames, labels = self.items[i]
                    gap = self.width - len(labels)
                    return torch.tensor(frames + [0] * gap), torch.tensor(labels + [0] * gap)


            def loader_for(clips, collate):
                return DataLoader(clips, batch_size=4, collate_fn=collate)


            def fit(net, loader):
                for frames, labels in loader:
                    F.cross_entropy(net(frames).transpose(1, 2), labels).backward()
            """
        ),
        # A collate factory whose closure pads the targets with -100.
        Valid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            from torch.utils.data import DataLoader


            def make_batcher(tokenize):
                def batcher(pairs):
                    xs = pad_sequence([tokenize(a) for a, _ in pairs], batch_first=True)
                    ys = pad_sequence([tokenize(b) for _, b in pairs], batch_first=True, padding_value=-100)
                    return xs, ys
                return batcher


            def fit(net, pairs, tokenize):
                ce = nn.CrossEntropyLoss()
                for step, (xs, ys) in enumerate(DataLoader(pairs, collate_fn=make_batcher(tokenize))):
                    ce(net(xs).flatten(0, 1), ys.flatten()).backward()
            """
        ),
        # The pad class weighted out instead of ignored.
        Valid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence


            def loss(logits, tgts, weight):
                weight[0] = 0.0
                return F.cross_entropy(logits, pad_sequence(tgts), weight=weight)
            """
        ),
        # ignore_index passed positionally.
        Valid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence


            def step(logits, tgts):
                return nn.CrossEntropyLoss(None, None, 0)(logits, pad_sequence(tgts))
            """
        ),
        # ignore_index may come through **kwargs.
        Valid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence


            def loss(logits, tgts, **kw):
                return F.cross_entropy(logits, pad_sequence(tgts), **kw)
            """
        ),
        # A boolean selection drops the padding before the loss.
        Valid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            def step(logits, seqs):
                targets = pad_sequence(seqs, batch_first=True)
                keep = targets != 0
                return F.cross_entropy(logits[keep], targets[keep])
            """
        ),
        # reduction=none: the per-token losses are masked by hand.
        Valid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            def step(logits, seqs):
                targets = pad_sequence(seqs, batch_first=True)
                mask = (targets != 0).float()
                nll = F.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
                return (nll * mask).sum() / mask.sum()
            """
        ),
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
        # Padding value unknown, and not named as a token id: silent.
        Valid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            targets = pad_sequence(ts, batch_first=True, padding_value=fill)
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
        # HF-style collate: labels padded with -100, shifted loss in another function.
        Valid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            def collate(batch):
                input_ids = pad_sequence([b["input_ids"] for b in batch], batch_first=True, padding_value=0)
                labels = pad_sequence([b["labels"] for b in batch], batch_first=True, padding_value=-100)
                return input_ids, labels
            def compute_loss(logits, labels):
                shift_logits = logits[..., :-1, :].contiguous()
                shift_labels = labels[..., 1:].contiguous()
                return F.cross_entropy(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))
            """
        ),
        # Labels cloned from padded inputs and the pad id rewritten to -100.
        Valid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            PAD = 0
            def step(model, seqs):
                input_ids = pad_sequence(seqs, batch_first=True, padding_value=PAD)
                labels = input_ids.clone()
                labels[labels == PAD] = -100
                logits = model(input_ids)
                return F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))
            """
        ),
        # Labels rewritten with masked_fill from an attention mask.
        Valid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            def step(model, seqs):
                input_ids = pad_sequence(seqs, batch_first=True)
                attention_mask = input_ids != 0
                labels = input_ids.masked_fill(~attention_mask, -100)
                logits = model(input_ids, attention_mask=attention_mask)
                return F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))
            """
        ),
        # One named constant for the padding value and ignore_index.
        Valid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            IGNORE_INDEX = -100
            class Trainer:
                def __init__(self, model):
                    self.model = model
                    self.loss_fn = nn.CrossEntropyLoss(ignore_index=IGNORE_INDEX)
                def step(self, xs, ys):
                    targets = pad_sequence(ys, batch_first=True, padding_value=IGNORE_INDEX)
                    logits = self.model(xs)
                    return self.loss_fn(logits.view(-1, logits.size(-1)), targets.view(-1))
            """
        ),
        # Loss in __init__ with ignore_index=0, pad_sequence's default 0.
        Valid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            class Model(nn.Module):
                def __init__(self, vocab):
                    super().__init__()
                    self.head = nn.Linear(512, vocab)
                    self.criterion = nn.CrossEntropyLoss(ignore_index=0, label_smoothing=0.1)
                def forward(self, h, tgt_list):
                    tgt = pad_sequence(tgt_list, batch_first=True)
                    logits = self.head(h)
                    return self.criterion(logits.view(-1, logits.size(-1)), tgt.view(-1))
            """
        ),
        # Sequence classification: padded inputs, one label per sequence.
        Valid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            class Classifier(nn.Module):
                def __init__(self, encoder, n_classes):
                    super().__init__()
                    self.encoder = encoder
                    self.head = nn.Linear(256, n_classes)
                    self.loss_fn = nn.CrossEntropyLoss()
                def forward(self, token_lists, labels):
                    x = pad_sequence(token_lists, batch_first=True)
                    pooled = self.encoder(x).mean(dim=1)
                    return self.loss_fn(self.head(pooled), labels)
            """
        ),
        # Pad id from an attribute on both sides: unknown, silent.
        Valid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            class Seq2Seq:
                def __init__(self, pad_idx):
                    self.pad_idx = pad_idx
                    self.criterion = nn.CrossEntropyLoss(ignore_index=pad_idx)
                def step(self, logits, tgt_list):
                    tgt = pad_sequence(tgt_list, batch_first=True, padding_value=self.pad_idx)
                    return self.criterion(logits.view(-1, logits.size(-1)), tgt.view(-1))
            """
        ),
        # In-place masked_fill_ rewrite.
        Valid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            def step(logits, seqs):
                targets = pad_sequence(seqs, batch_first=True)
                targets.masked_fill_(targets == 0, -100)
                return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
            """
        ),
        # torch.where rewrite with full_like and a constant pad id.
        Valid(
            """
            import torch
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            PAD = 3
            def step(logits, seqs):
                targets = pad_sequence(seqs, batch_first=True, padding_value=PAD)
                targets = torch.where(targets == PAD, torch.full_like(targets, -100), targets)
                return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
            """
        ),
        # ignore_index and padding_value from config: unknown, silent.
        Valid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            loss_fn = nn.CrossEntropyLoss(ignore_index=cfg.pad_token_id)
            def step(logits, seqs):
                targets = pad_sequence(seqs, batch_first=True, padding_value=cfg.pad_token_id)
                return loss_fn(logits.view(-1, logits.size(-1)), targets.view(-1))
            """
        ),
        # Packed targets: the padding never reaches the loss.
        Valid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence, pack_padded_sequence
            def step(out_packed, seqs, lengths):
                targets = pad_sequence(seqs, batch_first=True)
                packed = pack_padded_sequence(targets, lengths, batch_first=True, enforce_sorted=False)
                return F.cross_entropy(out_packed.data, packed.data)
            """
        ),
        # Float -100.0 padding cast to long matches the default.
        Valid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            def step(logits, seqs):
                targets = pad_sequence(seqs, batch_first=True, padding_value=-100.0)
                return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.long().view(-1))
            """
        ),
        # The same, with the padding positions set to -100 (Hugging Face's convention).
        Valid(
            """
            import torch
            import torch.nn.functional as F
            from dataclasses import dataclass


            @dataclass
            class Config:
                pad_token_id: int = 3


            def pad_batch(seqs, config: Config):
                n = max(len(s) for s in seqs)
                return torch.tensor([s + [config.pad_token_id] * (n - len(s)) for s in seqs])


            def lm_loss(logits, labels):
                return F.cross_entropy(logits.flatten(0, 1), labels.flatten())


            def step(model, batch, config):
                ids = pad_batch(batch, config)
                labels = ids[:, 1:].clone()
                labels[labels == config.pad_token_id] = -100
                return lm_loss(model(ids[:, :-1]), labels)
            """
        ),
        # A vocabulary's pad id, whatever its number, given as ignore_index too.
        Valid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence

            PAD_IDX = vocab["<pad>"]
            criterion = nn.CrossEntropyLoss(ignore_index=PAD_IDX)


            def train_step(model, src, tgt_list):
                tgt = pad_sequence(tgt_list, padding_value=PAD_IDX)
                out = model(src, tgt[:-1])
                return criterion(out.reshape(-1, out.shape[-1]), tgt[1:].reshape(-1))
            """
        ),
        # A tokenizer's pad id in the labels, rewritten to -100 before the loss.
        Valid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence


            def summary_loss(model, tokenizer, article_ids, summary_ids):
                labels = pad_sequence(summary_ids, batch_first=True, padding_value=tokenizer.pad_token_id)
                labels[labels == tokenizer.pad_token_id] = -100
                logits = model(article_ids)
                return F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))
            """
        ),
        # Rows filled into a -100 tensor: the rest of each row is already ignored.
        Valid(
            """
            import torch
            import torch.nn.functional as F


            def lm_loss(logits, seqs, n):
                targets = torch.full((len(seqs), n), -100, dtype=torch.long)
                for i, s in enumerate(seqs):
                    targets[i, : len(s)] = torch.tensor(s)
                return F.cross_entropy(logits.flatten(0, 1), targets.flatten())
            """
        ),
        # A command-line pad index defaulting to -100 is no token id, whatever its name.
        Valid(
            """
            import argparse
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence


            def collate(batch, args):
                return pad_sequence(batch, batch_first=True, padding_value=args.pad_index)


            def run(args, model, batches):
                loss_fn = nn.CrossEntropyLoss()
                for batch in batches:
                    y = collate(batch, args)
                    out = model(y)
                    loss_fn(out.view(-1, out.size(-1)), y.view(-1)).backward()


            if __name__ == "__main__":
                parser = argparse.ArgumentParser()
                parser.add_argument("--pad-index", type=int, default=-100)
                run(parser.parse_args(), nn.Identity(), [])
            """
        ),
        # The only construction passes the pad id as ignore_index.
        Valid(
            """
            import torch.nn.functional as F
            from torch import nn
            from torch.nn.utils.rnn import pad_sequence


            class LMHead(nn.Module):
                def __init__(self, dim, vocab_size, ignore_index=-100):
                    super().__init__()
                    self.proj = nn.Linear(dim, vocab_size)
                    self.ignore_index = ignore_index

                def forward(self, hidden, targets):
                    return F.cross_entropy(self.proj(hidden).transpose(1, 2), targets, ignore_index=self.ignore_index)


            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.head = LMHead(128, 1000, ignore_index=1)

                def forward(self, hidden, target_seqs):
                    return self.head(hidden, pad_sequence(target_seqs, batch_first=True, padding_value=1))
            """
        ),
        # HF's label pad id is -100, not a token id.
        Valid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence


            def seq2seq_collate(features, collator):
                labels = pad_sequence(features, batch_first=True, padding_value=collator.label_pad_token_id)
                return labels


            def loss_of(logits, features, collator):
                labels = seq2seq_collate(features, collator)
                return F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))
            """
        ),
        # Zero-padded rows whose zeros are turned into -100 before the loss.
        Valid(
            """
            import torch
            import torch.nn.functional as F


            def encode_batch(captions, length):
                ids = torch.zeros(len(captions), length, dtype=torch.long)
                for row, caption in enumerate(captions):
                    tokens = [ord(ch) % 250 + 1 for ch in caption][:length]
                    ids[row, : len(tokens)] = torch.tensor(tokens)
                return ids


            def caption_loss(decoder, images, captions):
                ids = encode_batch(captions, 32)
                logits = decoder(images, ids[:, :-1])
                targets = ids[:, 1:].masked_fill(ids[:, 1:] == 0, -100)
                return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
            """
        ),
        # A pad id parameter whose default (-100) is what every caller gets.
        Valid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence


            def collate(rows, pad_id=-100):
                return pad_sequence(rows, batch_first=True, padding_value=pad_id)


            def loss(logits, rows):
                return F.cross_entropy(logits.flatten(0, 1), collate(rows).flatten())
            """
        ),
        # A padding tokenizer's input_ids as labels, their padding turned into -100 through the attention mask.
        Valid(
            """
            import torch.nn.functional as F


            def lm_loss(model, tokenizer, texts):
                enc = tokenizer(texts, padding="longest", return_tensors="pt")
                labels = enc.input_ids.clone()
                labels[enc.attention_mask == 0] = -100
                logits = model(enc.input_ids)
                return F.cross_entropy(logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten())
            """
        ),
            # torch.full with -100, rows filled with data: the padding is already the ignore value.
        Valid(
            """
            import torch
            import torch.nn.functional as F


            def make_labels(token_lists):
                width = max(len(t) for t in token_lists)
                labels = torch.full((len(token_lists), width), -100, dtype=torch.long)
                for row, tokens in enumerate(token_lists):
                    labels[row, : len(tokens)] = torch.tensor(tokens)
                return labels


            def train_step(model, inputs, token_lists):
                labels = make_labels(token_lists)
                logits = model(inputs)
                return F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))
            """
        ),
        # The pad id rewritten to -100 after the rows are filled.
        Valid(
            """
            import torch
            import torch.nn.functional as F

            PAD = 0


            def make_labels(token_lists):
                width = max(len(t) for t in token_lists)
                labels = torch.full((len(token_lists), width), PAD, dtype=torch.long)
                for row, tokens in enumerate(token_lists):
                    labels[row, : len(tokens)] = torch.tensor(tokens)
                labels[labels == PAD] = -100
                return labels


            def train_step(model, inputs, token_lists):
                labels = make_labels(token_lists)
                logits = model(inputs)
                return F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))
            """
        ),
        # A collate function whose fill defaults to -100 (the DataLoader passes the batch alone).
        Valid(
            """
            import torch
            import torch.nn.functional as F
            from torch.utils.data import DataLoader


            def collate(samples, label_fill=-100):
                longest = max(len(s) for s in samples)
                labels = torch.full((len(samples), longest), label_fill, dtype=torch.long)
                for i, s in enumerate(samples):
                    labels[i, : len(s)] = torch.tensor(s)
                return labels


            def fit(model, inputs, samples):
                for labels in DataLoader(samples, batch_size=8, collate_fn=collate):
                    logits = model(inputs)
                    loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten())
                    loss.backward()
            """
        ),
        # Padding shifted by an offset: -101 + 1 is the ignore value.
        Valid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence


            def step(model, seqs):
                labels = pad_sequence(seqs, batch_first=True, padding_value=-101)
                labels = labels + 1
                logits = model(labels)
                return F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))
            """
        ),
            # A dict batch whose labels entry has the pad id rewritten to -100 in place.
        Valid(
            """
            import torch
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            from torch.utils.data import DataLoader

            PAD_ID = 0


            def collate(samples):
                ids = pad_sequence([torch.tensor(s) for s in samples], batch_first=True, padding_value=PAD_ID)
                batch = {"input_ids": ids[:, :-1], "labels": ids[:, 1:].clone()}
                batch["labels"][batch["labels"] == PAD_ID] = -100
                return batch


            def train(model, samples):
                for batch in DataLoader(samples, batch_size=8, collate_fn=collate):
                    logits = model(batch["input_ids"])
                    loss = F.cross_entropy(logits.view(-1, logits.size(-1)), batch["labels"].view(-1))
                    loss.backward()
            """
        ),
        # A dict batch whose labels entry is replaced by a masked_fill to -100.
        Valid(
            """
            import torch
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            from torch.utils.data import DataLoader

            PAD_ID = 0


            def collate(samples):
                ids = pad_sequence([torch.tensor(s) for s in samples], batch_first=True, padding_value=PAD_ID)
                return {"input_ids": ids, "labels": ids}


            def train(model, samples):
                for batch in DataLoader(samples, batch_size=8, collate_fn=collate):
                    batch["labels"] = batch["labels"].masked_fill(batch["labels"] == PAD_ID, -100)
                    logits = model(batch["input_ids"])
                    loss = F.cross_entropy(logits.view(-1, logits.size(-1)), batch.get("labels").view(-1))
                    loss.backward()
            """
        ),
        # A collator instance padding labels with the config's -100.
        Valid(
            """
            from dataclasses import dataclass

            import torch
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            from torch.utils.data import DataLoader


            @dataclass
            class DataConfig:
                pad_token_id: int = 0
                label_ignore_id: int = -100


            class PadCollator:
                def __init__(self, config: DataConfig):
                    self.config = config

                def __call__(self, samples):
                    inputs = pad_sequence([s[0] for s in samples], batch_first=True, padding_value=self.config.pad_token_id)
                    labels = pad_sequence([s[1] for s in samples], batch_first=True, padding_value=self.config.label_ignore_id)
                    return {"inputs": inputs, "labels": labels}


            def run(model, samples):
                loss_fn = nn.CrossEntropyLoss()
                for batch in DataLoader(samples, collate_fn=PadCollator(DataConfig())):
                    logits = model(batch["inputs"])
                    loss_fn(logits.flatten(0, 1), batch["labels"].flatten()).backward()
            """
        ),
            # The labels entry rewritten through a local name for the same tensor.
        Valid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            def step(model, seqs):
                ids = pad_sequence(seqs, batch_first=True)
                batch = {"input_ids": ids, "labels": ids.clone()}
                labels = batch["labels"]
                labels[labels == 0] = -100
                logits = model(batch["input_ids"])
                return F.cross_entropy(logits.view(-1, logits.size(-1)), batch["labels"].view(-1))
            """
        ),
            # A dataset whose __getitem__ pads the labels with -100; the default collate stacks them.
        Valid(
            """
            import torch
            import torch.nn as nn
            from torch.utils.data import Dataset, DataLoader

            PAD = 0


            class LMDataset(Dataset):
                def __init__(self, rows, max_len=32):
                    self.rows = rows
                    self.max_len = max_len

                def __len__(self):
                    return len(self.rows)

                def __getitem__(self, i):
                    ids = self.rows[i][: self.max_len]
                    inputs = torch.tensor(ids[:-1] + [PAD] * (self.max_len - len(ids)))
                    labels = torch.tensor(ids[1:] + [-100] * (self.max_len - len(ids)))
                    return inputs, labels


            def train(model, rows):
                loader = DataLoader(LMDataset(rows), batch_size=16, shuffle=True)
                crit = nn.CrossEntropyLoss()
                for x, y in loader:
                    out = model(x)
                    crit(out.view(-1, out.size(-1)), y.view(-1)).backward()
            """
        ),
        # An index tensor of unknown dtype may be a boolean selection that drops the padding.
        Valid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence


            def step(net, target_list, chosen):
                targets = pad_sequence(target_list, batch_first=True)
                out = net(chosen)
                return F.cross_entropy(out, targets[chosen])
            """
        ),
        # Integer positions on the token axis pick single tokens, not whole padded rows.
        Valid(
            """
            import torch
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence


            def step(net, target_list):
                targets = pad_sequence(target_list, batch_first=True)
                first = torch.randint(0, 4, (targets.size(0),))
                out = net(first)
                return F.cross_entropy(out, targets[:, first])
            """
        ),
        # The label map only gives the tags their ids; the -100 padding meets the default
        # ignore_index.
        Valid(
            """
            import torch
            import torch.nn.functional as F

            TAGS = ["O", "B-LOC", "I-LOC"]
            TAG_IDS = {t: i for i, t in enumerate(TAGS)}


            def tag_loss(scores, tag_rows, width):
                gold = torch.full((len(tag_rows), width), -100)
                for r, tags in enumerate(tag_rows):
                    gold[r, : len(tags)] = torch.tensor([TAG_IDS[t] for t in tags])
                return F.cross_entropy(scores.flatten(0, 1), gold.flatten())
            """
        ),
        # Two collate functions: which one built the loader is not shown.
        Valid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence


            def collate_train(pairs):
                return pad_sequence([p[0] for p in pairs]), pad_sequence([p[1] for p in pairs])


            def collate_eval(pairs):
                return pad_sequence([p[0] for p in pairs]), pad_sequence([p[1] for p in pairs], padding_value=-100)


            def run_epoch(net, loader):
                ce = nn.CrossEntropyLoss()
                for src, tgt in loader:
                    ce(net(src).flatten(0, 1), tgt.flatten()).backward()
            """
        ),
        # The module's collate pads the targets with -100: the loader's batches agree with the loss.
        Valid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence


            def collate_pairs(pairs):
                src = pad_sequence([p[0] for p in pairs], batch_first=True)
                tgt = pad_sequence([p[1] for p in pairs], batch_first=True, padding_value=-100)
                return src, tgt


            def run_epoch(net, train_loader):
                ce = nn.CrossEntropyLoss()
                for src, tgt in train_loader:
                    ce(net(src).flatten(0, 1), tgt.flatten()).backward()
            """
        ),
        # Pairs iterated from a parameter that is no loader: not the collate's batches.
        Valid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence


            def collate_pairs(pairs):
                return pad_sequence([p[0] for p in pairs]), pad_sequence([p[1] for p in pairs])


            def run_epoch(net, examples):
                ce = nn.CrossEntropyLoss()
                for src, tgt in examples:
                    ce(net(src), tgt).backward()
            """
        ),
        # The same step, the collate method turning the pad ids into -100 for the labels.
        Valid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence


            class CaptionData(torch.utils.data.Dataset):
                def __init__(self, captions, tokenizer):
                    self.captions = captions
                    self.tokenizer = tokenizer

                def collate(self, rows):
                    enc = self.tokenizer(rows, padding=True)
                    ids = pad_sequence([torch.tensor(i) for i in enc["input_ids"]], batch_first=True, padding_value=-100)
                    return {"input_ids": ids}


            class CaptionLM(nn.Module):
                def __init__(self, body):
                    super().__init__()
                    self.body = body

                def forward(self, ids):
                    logits = self.body(ids[:, :-1].clamp(min=0))
                    return F.cross_entropy(logits.transpose(1, 2), ids[:, 1:])


            def train_step(model, batch, opt):
                loss = model(batch["input_ids"])
                loss.backward()
                opt.step()
            """
        ),
        # `batch_size` says a number, not a batch of the collate function.
        Valid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence


            def collate(rows):
                return pad_sequence(rows, batch_first=True)


            def step(logits, targets, batch_size):
                return F.cross_entropy(logits, targets) / batch_size
            """
        ),
        # The same, the zeros turned into -100 before the EOS column is appended.
        Valid(
            """
            import torch
            import torch.nn.functional as F


            def encode(token_lists, width=64):
                out = torch.zeros(len(token_lists), width, dtype=torch.long)
                for i, toks in enumerate(token_lists):
                    out[i, : len(toks)] = torch.tensor(toks[:width])
                return out


            def lm_loss(net, token_lists, eos_id):
                text = encode(token_lists)
                targets = F.pad(text.masked_fill(text == 0, -100), (0, 1), value=eos_id)
                logits = net(text)
                return F.cross_entropy(logits.transpose(1, 2), targets[:, 1:])
            """
        ),
        # The config's ignore_index is its pad id: they agree.
        Valid(
            """
            from dataclasses import dataclass

            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence


            @dataclass
            class TrainConfig:
                pad_id: int = 0
                ignore_index: int = 0


            class Objective(nn.Module):
                def __init__(self, cfg: TrainConfig):
                    super().__init__()
                    self.cfg = cfg
                    self.ce = nn.CrossEntropyLoss(ignore_index=cfg.ignore_index)

                def forward(self, logits, target_rows):
                    targets = pad_sequence(target_rows, batch_first=True, padding_value=self.cfg.pad_id)
                    return self.ce(logits.flatten(0, 1), targets.flatten())
            """
        ),
    ]
    INVALID = [
        # A Kaggle-style NER script: the collator instance is built at the top level with the
        # tag vocabulary's "<pad>" id (0, the first special), and the training function it is
        # handed to uses the default ignore_index.
        Invalid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            from torch.utils.data import DataLoader

            def build_vocab(items, specials):
                vocab = {s: i for i, s in enumerate(specials)}
                for seq in items:
                    for tok in seq:
                        if tok not in vocab:
                            vocab[tok] = len(vocab)
                return vocab

            class Collator:
                def __init__(self, pad_id, label_pad_id):
                    self.pad_id = pad_id
                    self.label_pad_id = label_pad_id

                def __call__(self, batch):
                    ids, labels = zip(*batch)
                    ids = pad_sequence(ids, batch_first=True, padding_value=self.pad_id)
                    labels = pad_sequence(labels, batch_first=True, padding_value=self.label_pad_id)
                    return ids, labels

            def train_one_epoch(model, loader, optimizer, criterion, n_tags):
                for ids, labels in loader:
                    loss = criterion(model(ids).view(-1, n_tags), labels.view(-1))
                    loss.backward()
                    optimizer.step()

            if __name__ == "__main__":
                words, tags = [["EU", "rejects"]], [["B-ORG", "O"]]
                word2idx = build_vocab(words, ["<pad>", "<unk>"])
                tag2idx = build_vocab(tags, ["<pad>"])
                loader = DataLoader(list(zip(words, tags)), collate_fn=Collator(word2idx["<pad>"], tag2idx["<pad>"]))
                model = nn.Linear(8, len(tag2idx))
                criterion = nn.CrossEntropyLoss()
                train_one_epoch(model, loader, None, criterion, len(tag2idx))
            """,
            fixed="""
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            from torch.utils.data import DataLoader

            def build_vocab(items, specials):
                vocab = {s: i for i, s in enumerate(specials)}
                for seq in items:
                    for tok in seq:
                        if tok not in vocab:
                            vocab[tok] = len(vocab)
                return vocab

            class Collator:
                def __init__(self, pad_id, label_pad_id):
                    self.pad_id = pad_id
                    self.label_pad_id = label_pad_id

                def __call__(self, batch):
                    ids, labels = zip(*batch)
                    ids = pad_sequence(ids, batch_first=True, padding_value=self.pad_id)
                    labels = pad_sequence(labels, batch_first=True, padding_value=self.label_pad_id)
                    return ids, labels

            def train_one_epoch(model, loader, optimizer, criterion, n_tags):
                for ids, labels in loader:
                    loss = criterion(model(ids).view(-1, n_tags), labels.view(-1))
                    loss.backward()
                    optimizer.step()

            if __name__ == "__main__":
                words, tags = [["EU", "rejects"]], [["B-ORG", "O"]]
                word2idx = build_vocab(words, ["<pad>", "<unk>"])
                tag2idx = build_vocab(tags, ["<pad>"])
                loader = DataLoader(list(zip(words, tags)), collate_fn=Collator(word2idx["<pad>"], tag2idx["<pad>"]))
                model = nn.Linear(8, len(tag2idx))
                criterion = nn.CrossEntropyLoss(ignore_index=0)
                train_one_epoch(model, loader, None, criterion, len(tag2idx))
            """,
            line=36,
        ),
        # The collate function comes from a factory (`partial` of a module function with the
        # tokenizer's pad id); the validation loader is None unless validation data is given.
        Invalid(
            """
            from functools import partial
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            from torch.utils.data import DataLoader

            def _collate(batch, src_pad_id, tgt_pad_id):
                srcs, tgts = zip(*batch)
                src = pad_sequence(srcs, batch_first=True, padding_value=src_pad_id)
                tgt = pad_sequence(tgts, batch_first=True, padding_value=tgt_pad_id)
                return src, tgt

            def make_collate_fn(src_tok, tgt_tok):
                return partial(_collate, src_pad_id=src_tok.pad_id, tgt_pad_id=tgt_tok.pad_id)

            def run_epoch(model, loader, criterion):
                for src, tgt in loader:
                    logits = model(src, tgt[:, :-1])
                    loss = criterion(logits.reshape(-1, logits.size(-1)), tgt[:, 1:].reshape(-1))
                    loss.backward()

            def main(model, train_set, valid_set, src_tok, tgt_tok):
                collate = make_collate_fn(src_tok, tgt_tok)
                train_loader = DataLoader(train_set, batch_size=64, shuffle=True, collate_fn=collate)
                valid_loader = None
                if valid_set is not None:
                    valid_loader = DataLoader(valid_set, batch_size=64, collate_fn=collate)
                criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
                run_epoch(model, train_loader, criterion)
                if valid_loader is not None:
                    run_epoch(model, valid_loader, criterion)
            """,
        ),
        # The model handed to the training step is a parameter named for its class: its forward
        # gets the zero-padded captions, and the loss in it ignores -100.
        Invalid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            class CaptionDecoder(nn.Module):
                def __init__(self, vocab, dim):
                    super().__init__()
                    self.emb = nn.Embedding(vocab, dim)
                    self.out = nn.Linear(dim, vocab)
                def forward(self, captions):
                    logits = self.out(self.emb(captions[:, :-1]))
                    return F.cross_entropy(logits.transpose(1, 2), captions[:, 1:])
            def train_step(decoder, captions, opt):
                loss = decoder(pad_sequence(captions, batch_first=True))
                loss.backward()
                opt.step()
            """,
            fixed="""
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            class CaptionDecoder(nn.Module):
                def __init__(self, vocab, dim):
                    super().__init__()
                    self.emb = nn.Embedding(vocab, dim)
                    self.out = nn.Linear(dim, vocab)
                def forward(self, captions):
                    logits = self.out(self.emb(captions[:, :-1]))
                    return F.cross_entropy(logits.transpose(1, 2), captions[:, 1:], ignore_index=0)
            def train_step(decoder, captions, opt):
                loss = decoder(pad_sequence(captions, batch_first=True))
                loss.backward()
                opt.step()
            """,
        ),
        # Labels padded with -100 by a collate function bound with `partial`, but the loss
        # ignores the pad token's id: a token id is never -100.
        Invalid(
            """
            from functools import partial
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            from torch.utils.data import DataLoader

            def collate_batch(batch, pad_id):
                ids = pad_sequence([b["ids"] for b in batch], batch_first=True, padding_value=pad_id)
                labels = pad_sequence([b["tags"] for b in batch], batch_first=True, padding_value=-100)
                return {"ids": ids, "labels": labels}

            def train(dataset, model, vocab):
                pad_id = vocab.pad_id
                loader = DataLoader(dataset, batch_size=32, collate_fn=partial(collate_batch, pad_id=pad_id))
                loss_fn = nn.CrossEntropyLoss(ignore_index=pad_id)
                for batch in loader:
                    logits = model(batch["ids"])
                    loss = loss_fn(logits.flatten(0, 1), batch["labels"].flatten())
                    loss.backward()
            """
        ),
        # A loss object built at module level, called in a function.
        Invalid(
            """
            import torch.nn as nn
            from torch.nn.utils import rnn as rnn_utils
            loss_fn = nn.CrossEntropyLoss(reduction="mean")
            def step(model, xs, ys):
                targets = rnn_utils.pad_sequence(ys, batch_first=True)
                logits = model(xs)
                return loss_fn(logits.view(-1, logits.shape[-1]), targets.view(-1))
            """,
            fixed="""
            import torch.nn as nn
            from torch.nn.utils import rnn as rnn_utils
            loss_fn = nn.CrossEntropyLoss(reduction="mean", ignore_index=0)
            def step(model, xs, ys):
                targets = rnn_utils.pad_sequence(ys, batch_first=True)
                logits = model(xs)
                return loss_fn(logits.view(-1, logits.shape[-1]), targets.view(-1))
            """,
        ),
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
            line=4,
            column=10,
            page=True,
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
        # `from torch.nn import functional as F`, a pad id constant, HF-style collate in the same function.
        Invalid(
            """
            import torch
            import torch.nn as nn
            from torch.nn import functional as F
            from torch.nn.utils.rnn import pad_sequence
            PAD_ID = 0
            def collate_and_loss(model, batch):
                inputs = pad_sequence([b["input_ids"] for b in batch], batch_first=True, padding_value=PAD_ID)
                labels = pad_sequence([b["labels"] for b in batch], batch_first=True, padding_value=PAD_ID)
                logits = model(inputs)
                return F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))
            """,
            fixed="""
            import torch
            import torch.nn as nn
            from torch.nn import functional as F
            from torch.nn.utils.rnn import pad_sequence
            PAD_ID = 0
            def collate_and_loss(model, batch):
                inputs = pad_sequence([b["input_ids"] for b in batch], batch_first=True, padding_value=PAD_ID)
                labels = pad_sequence([b["labels"] for b in batch], batch_first=True, padding_value=PAD_ID)
                logits = model(inputs)
                return F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1), ignore_index=PAD_ID)
            """,
        ),
        # Lightning-style: loss built in __init__ with other options, pad_sequence's default 0 in training_step.
        Invalid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            class Seq2Seq(nn.Module):
                def __init__(self, vocab_size, d_model):
                    super().__init__()
                    self.embed = nn.Embedding(vocab_size, d_model)
                    self.out = nn.Linear(d_model, vocab_size)
                    self.loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
                def training_step(self, batch):
                    src, tgt = batch
                    tgt = pad_sequence(tgt, batch_first=True)
                    logits = self.out(self.embed(src))
                    return self.loss_fn(logits.reshape(-1, logits.size(-1)), tgt.reshape(-1))
            """,
            fixed="""
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            class Seq2Seq(nn.Module):
                def __init__(self, vocab_size, d_model):
                    super().__init__()
                    self.embed = nn.Embedding(vocab_size, d_model)
                    self.out = nn.Linear(d_model, vocab_size)
                    self.loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1, ignore_index=0)
                def training_step(self, batch):
                    src, tgt = batch
                    tgt = pad_sequence(tgt, batch_first=True)
                    logits = self.out(self.embed(src))
                    return self.loss_fn(logits.reshape(-1, logits.size(-1)), tgt.reshape(-1))
            """,
        ),
        # Top-level script, fully qualified torch.nn.utils.rnn.pad_sequence and cross_entropy.
        Invalid(
            """
            import torch
            x = torch.nn.utils.rnn.pad_sequence(xs, batch_first=True)
            y = torch.nn.utils.rnn.pad_sequence(ys, batch_first=True, padding_value=0)
            logits = model(x)
            loss = torch.nn.functional.cross_entropy(logits.view(-1, 1000), y.view(-1))
            loss.backward()
            """,
            fixed="""
            import torch
            x = torch.nn.utils.rnn.pad_sequence(xs, batch_first=True)
            y = torch.nn.utils.rnn.pad_sequence(ys, batch_first=True, padding_value=0)
            logits = model(x)
            loss = torch.nn.functional.cross_entropy(logits.view(-1, 1000), y.view(-1), ignore_index=0)
            loss.backward()
            """,
        ),
        # pad_sequence imported under another name.
        Invalid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence as pad
            def lm_loss(logits, target_seqs):
                targets = pad(target_seqs, batch_first=True)
                return F.cross_entropy(logits.flatten(0, 1), targets.flatten())
            """,
            fixed="""
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence as pad
            def lm_loss(logits, target_seqs):
                targets = pad(target_seqs, batch_first=True)
                return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=0)
            """,
        ),
        # Shifted LM targets: slicing a padded batch keeps its padding.
        Invalid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            def shifted_loss(model, seqs):
                tokens = pad_sequence(seqs, batch_first=True)
                logits = model(tokens[:, :-1])
                targets = tokens[:, 1:]
                return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
            """,
            fixed="""
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            def shifted_loss(model, seqs):
                tokens = pad_sequence(seqs, batch_first=True)
                logits = model(tokens[:, :-1])
                targets = tokens[:, 1:]
                return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=0)
            """,
        ),
        # (N, C, T) logits and a fairseq-style pad id of 1.
        Invalid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            def loss_ncl(logits, seqs):
                targets = pad_sequence(seqs, batch_first=True, padding_value=1)
                return F.cross_entropy(logits.transpose(1, 2), targets)
            """,
            fixed="""
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            def loss_ncl(logits, seqs):
                targets = pad_sequence(seqs, batch_first=True, padding_value=1)
                return F.cross_entropy(logits.transpose(1, 2), targets, ignore_index=1)
            """,
        ),
        # Module-level criterion with ignore_index=-1, time-major pad_sequence in a training loop.
        Invalid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            criterion = nn.CrossEntropyLoss(ignore_index=-1)
            for src, tgt in loader:
                tgt = pad_sequence(tgt)
                out = model(src)
                loss = criterion(out.view(-1, out.size(-1)), tgt.view(-1))
                loss.backward()
            """,
            fixed="""
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            criterion = nn.CrossEntropyLoss(ignore_index=0)
            for src, tgt in loader:
                tgt = pad_sequence(tgt)
                out = model(src)
                loss = criterion(out.view(-1, out.size(-1)), tgt.view(-1))
                loss.backward()
            """,
        ),
        # .to(device) and .contiguous() on the way to the loss.
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            device = torch.device("cuda")
            def step(model, xs, ys):
                y = pad_sequence(ys, batch_first=True).to(device)
                logits = model(xs)
                return F.cross_entropy(logits.contiguous().view(-1, logits.size(-1)), y.contiguous().view(-1))
            """,
            fixed="""
            import torch
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            device = torch.device("cuda")
            def step(model, xs, ys):
                y = pad_sequence(ys, batch_first=True).to(device)
                logits = model(xs)
                return F.cross_entropy(logits.contiguous().view(-1, logits.size(-1)), y.contiguous().view(-1), ignore_index=0)
            """,
        ),
        # Explicit ignore_index=-100 with targets padded with 0.
        Invalid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            class Tagger(nn.Module):
                def __init__(self, n_tags):
                    super().__init__()
                    self.proj = nn.Linear(256, n_tags)
                    self.criterion = nn.CrossEntropyLoss(ignore_index=-100)
                def loss(self, feats, tag_seqs):
                    tags = pad_sequence(tag_seqs, batch_first=True, padding_value=0)
                    scores = self.proj(feats)
                    return self.criterion(scores.view(-1, scores.size(-1)), tags.view(-1))
            """,
            fixed="""
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            class Tagger(nn.Module):
                def __init__(self, n_tags):
                    super().__init__()
                    self.proj = nn.Linear(256, n_tags)
                    self.criterion = nn.CrossEntropyLoss(ignore_index=0)
                def loss(self, feats, tag_seqs):
                    tags = pad_sequence(tag_seqs, batch_first=True, padding_value=0)
                    scores = self.proj(feats)
                    return self.criterion(scores.view(-1, scores.size(-1)), tags.view(-1))
            """,
        ),
        # Keyword arguments input=/target=, padding -100 but ignore_index=0.
        Invalid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            def step(logits, seqs):
                targets = pad_sequence(seqs, batch_first=True, padding_value=-100)
                return F.cross_entropy(input=logits.view(-1, 50), target=targets.view(-1), ignore_index=0)
            """,
            fixed="""
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            def step(logits, seqs):
                targets = pad_sequence(seqs, batch_first=True, padding_value=-100)
                return F.cross_entropy(input=logits.view(-1, 50), target=targets.view(-1), ignore_index=-100)
            """,
        ),
        # Two named constants: the fix names the pad id.
        Invalid(
            """
            import torch
            from torch import nn
            from torch.nn.utils.rnn import pad_sequence
            PAD = 0
            IGNORE = -100
            class Decoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.ce = nn.CrossEntropyLoss(ignore_index=IGNORE)
                def forward(self, logits, tgt_list):
                    tgt = pad_sequence(tgt_list, batch_first=True, padding_value=PAD)
                    return self.ce(logits.view(-1, logits.size(-1)), tgt.view(-1))
            """,
            fixed="""
            import torch
            from torch import nn
            from torch.nn.utils.rnn import pad_sequence
            PAD = 0
            IGNORE = -100
            class Decoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.ce = nn.CrossEntropyLoss(ignore_index=PAD)
                def forward(self, logits, tgt_list):
                    tgt = pad_sequence(tgt_list, batch_first=True, padding_value=PAD)
                    return self.ce(logits.view(-1, logits.size(-1)), tgt.view(-1))
            """,
        ),
        # `from torch.nn.utils import rnn as rnn_utils`, loss object built in the same function.
        Invalid(
            """
            import torch.nn as nn
            from torch.nn.utils import rnn as rnn_utils
            def evaluate(model, batches):
                loss_fn = nn.CrossEntropyLoss()
                total = 0.0
                for xs, ys in batches:
                    targets = rnn_utils.pad_sequence(ys, batch_first=True)
                    logits = model(xs)
                    total += loss_fn(logits.view(-1, logits.shape[-1]), targets.view(-1)).item()
                return total
            """,
            fixed="""
            import torch.nn as nn
            from torch.nn.utils import rnn as rnn_utils
            def evaluate(model, batches):
                loss_fn = nn.CrossEntropyLoss(ignore_index=0)
                total = 0.0
                for xs, ys in batches:
                    targets = rnn_utils.pad_sequence(ys, batch_first=True)
                    logits = model(xs)
                    total += loss_fn(logits.view(-1, logits.shape[-1]), targets.view(-1)).item()
                return total
            """,
        ),
        # A dataclass config's pad id, list padding in a helper, and the loss in another function.
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            from dataclasses import dataclass


            @dataclass
            class Config:
                pad_token_id: int = 3


            def pad_batch(seqs, config: Config):
                n = max(len(s) for s in seqs)
                return torch.tensor([s + [config.pad_token_id] * (n - len(s)) for s in seqs])


            def lm_loss(logits, labels):
                return F.cross_entropy(logits.flatten(0, 1), labels.flatten())


            def step(model, batch, config):
                ids = pad_batch(batch, config)
                return lm_loss(model(ids[:, :-1]), ids[:, 1:])
            """,
            fixed="""
            import torch
            import torch.nn.functional as F
            from dataclasses import dataclass


            @dataclass
            class Config:
                pad_token_id: int = 3


            def pad_batch(seqs, config: Config):
                n = max(len(s) for s in seqs)
                return torch.tensor([s + [config.pad_token_id] * (n - len(s)) for s in seqs])


            def lm_loss(logits, labels):
                return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=3)


            def step(model, batch, config):
                ids = pad_batch(batch, config)
                return lm_loss(model(ids[:, :-1]), ids[:, 1:])
            """,
        ),
        # A tokenizer that pads rows in a loop, used by a trainer built with it.
        Invalid(
            """
            import torch
            import torch.nn as nn


            class Tokenizer:
                def __init__(self):
                    self.pad_token_id = 0

                def batch_encode(self, rows, max_len=8):
                    out = []
                    for ids in rows:
                        out.append(ids + [self.pad_token_id] * (max_len - len(ids)))
                    return torch.tensor(out)


            class Trainer:
                def __init__(self, model, tokenizer):
                    self.model = model
                    self.tokenizer = tokenizer
                    self.criterion = nn.CrossEntropyLoss()

                def step(self, rows):
                    ids = self.tokenizer.batch_encode(rows)
                    logits = self.model(ids[:, :-1])
                    return self.criterion(logits.reshape(-1, logits.size(-1)), ids[:, 1:].reshape(-1))


            if __name__ == "__main__":
                Trainer(nn.Identity(), Tokenizer()).step([[1, 2], [3]])
            """,
            fixed="""
            import torch
            import torch.nn as nn


            class Tokenizer:
                def __init__(self):
                    self.pad_token_id = 0

                def batch_encode(self, rows, max_len=8):
                    out = []
                    for ids in rows:
                        out.append(ids + [self.pad_token_id] * (max_len - len(ids)))
                    return torch.tensor(out)


            class Trainer:
                def __init__(self, model, tokenizer):
                    self.model = model
                    self.tokenizer = tokenizer
                    self.criterion = nn.CrossEntropyLoss(ignore_index=0)

                def step(self, rows):
                    ids = self.tokenizer.batch_encode(rows)
                    logits = self.model(ids[:, :-1])
                    return self.criterion(logits.reshape(-1, logits.size(-1)), ids[:, 1:].reshape(-1))


            if __name__ == "__main__":
                Trainer(nn.Identity(), Tokenizer()).step([[1, 2], [3]])
            """,
        ),
        # A collate_fn pads the targets; the training loop gets them from the DataLoader.
        Invalid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            from torch.utils.data import DataLoader

            PAD_IDX = 1


            def collate(batch):
                return pad_sequence(batch, padding_value=PAD_IDX)


            def train(model, loader, loss_fn):
                for tgt in loader:
                    logits = model(tgt[:-1])
                    loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt[1:].reshape(-1))
                    loss.backward()


            if __name__ == "__main__":
                train(nn.Identity(), DataLoader([], collate_fn=collate), nn.CrossEntropyLoss())
            """,
            fixed="""
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            from torch.utils.data import DataLoader

            PAD_IDX = 1


            def collate(batch):
                return pad_sequence(batch, padding_value=PAD_IDX)


            def train(model, loader, loss_fn):
                for tgt in loader:
                    logits = model(tgt[:-1])
                    loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt[1:].reshape(-1))
                    loss.backward()


            if __name__ == "__main__":
                train(nn.Identity(), DataLoader([], collate_fn=collate), nn.CrossEntropyLoss(ignore_index=PAD_IDX))
            """,
        ),
        # A torchtext-style vocabulary lookup: the pad id is a token id (>= 0), never -100.
        Invalid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            from torchtext.vocab import build_vocab_from_iterator

            vocab = build_vocab_from_iterator(corpus, specials=["<unk>", "<pad>"])
            PAD_IDX = vocab["<pad>"]
            criterion = nn.CrossEntropyLoss()


            def train_step(model, src, tgt_list):
                tgt = pad_sequence(tgt_list, padding_value=PAD_IDX)
                out = model(src, tgt[:-1])
                return criterion(out.reshape(-1, out.shape[-1]), tgt[1:].reshape(-1))
            """,
            fixed="""
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            from torchtext.vocab import build_vocab_from_iterator

            vocab = build_vocab_from_iterator(corpus, specials=["<unk>", "<pad>"])
            PAD_IDX = vocab["<pad>"]
            criterion = nn.CrossEntropyLoss(ignore_index=PAD_IDX)


            def train_step(model, src, tgt_list):
                tgt = pad_sequence(tgt_list, padding_value=PAD_IDX)
                out = model(src, tgt[:-1])
                return criterion(out.reshape(-1, out.shape[-1]), tgt[1:].reshape(-1))
            """,
        ),
        # A tokenizer's pad token id in the targets; the loss ignores -100 (no fix: the id is not in scope where the loss is).
        Invalid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence


            def summary_loss(model, tokenizer, article_ids, summary_ids):
                labels = pad_sequence(summary_ids, batch_first=True, padding_value=tokenizer.pad_token_id)
                logits = model(article_ids, labels[:, :-1])
                return F.cross_entropy(logits.transpose(1, 2), labels[:, 1:])
            """,
        ),
        # A vocabulary written as a dict literal; the loss ignores another id.
        Invalid(
            """
            import torch
            from torch import nn


            class CharVocab:
                def __init__(self):
                    self.stoi = {"<s>": 0, "</s>": 1, "<pad>": 2}

                def batch(self, words, width):
                    pad = self.stoi["<pad>"]
                    return torch.tensor([[self.stoi.get(c, 3) for c in w] + [pad] * (width - len(w)) for w in words])


            class Speller(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.vocab = CharVocab()
                    self.out = nn.Linear(64, 40)
                    self.loss = nn.CrossEntropyLoss(ignore_index=0)

                def forward(self, feats, words):
                    target = self.vocab.batch(words, feats.size(1))
                    return self.loss(self.out(feats).flatten(0, 1), target.flatten())
            """,
            fixed="""
            import torch
            from torch import nn


            class CharVocab:
                def __init__(self):
                    self.stoi = {"<s>": 0, "</s>": 1, "<pad>": 2}

                def batch(self, words, width):
                    pad = self.stoi["<pad>"]
                    return torch.tensor([[self.stoi.get(c, 3) for c in w] + [pad] * (width - len(w)) for w in words])


            class Speller(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.vocab = CharVocab()
                    self.out = nn.Linear(64, 40)
                    self.loss = nn.CrossEntropyLoss(ignore_index=2)

                def forward(self, feats, words):
                    target = self.vocab.batch(words, feats.size(1))
                    return self.loss(self.out(feats).flatten(0, 1), target.flatten())
            """,
        ),
        # A list of specials: the pad id is its position.
        Invalid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence

            SPECIAL_TOKENS = ["[CLS]", "[SEP]", "[PAD]"]
            PAD = SPECIAL_TOKENS.index("[PAD]")


            def tag_loss(scores, tag_seqs):
                tags = pad_sequence(tag_seqs, batch_first=True, padding_value=PAD)
                return F.cross_entropy(scores.view(-1, scores.size(-1)), tags.view(-1), ignore_index=-1)
            """,
            fixed="""
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence

            SPECIAL_TOKENS = ["[CLS]", "[SEP]", "[PAD]"]
            PAD = SPECIAL_TOKENS.index("[PAD]")


            def tag_loss(scores, tag_seqs):
                tags = pad_sequence(tag_seqs, batch_first=True, padding_value=PAD)
                return F.cross_entropy(scores.view(-1, scores.size(-1)), tags.view(-1), ignore_index=PAD)
            """,
        ),
        # A zeros tensor filled row by row up to each caption's length: the rest is padding 0.
        Invalid(
            """
            import torch
            import torch.nn.functional as F


            def encode_batch(captions, length):
                ids = torch.zeros(len(captions), length, dtype=torch.long)
                for row, caption in enumerate(captions):
                    tokens = [ord(ch) % 250 + 1 for ch in caption][:length]
                    ids[row, : len(tokens)] = torch.tensor(tokens)
                return ids


            def caption_loss(decoder, images, captions):
                ids = encode_batch(captions, 32)
                logits = decoder(images, ids[:, :-1])
                return F.cross_entropy(logits.reshape(-1, logits.size(-1)), ids[:, 1:].reshape(-1))
            """,
            fixed="""
            import torch
            import torch.nn.functional as F


            def encode_batch(captions, length):
                ids = torch.zeros(len(captions), length, dtype=torch.long)
                for row, caption in enumerate(captions):
                    tokens = [ord(ch) % 250 + 1 for ch in caption][:length]
                    ids[row, : len(tokens)] = torch.tensor(tokens)
                return ids


            def caption_loss(decoder, images, captions):
                ids = encode_batch(captions, 32)
                logits = decoder(images, ids[:, :-1])
                return F.cross_entropy(logits.reshape(-1, logits.size(-1)), ids[:, 1:].reshape(-1), ignore_index=0)
            """,
        ),
        # ignore_index left at its -100 default by the only construction (no fix: it is configured by the caller).
        Invalid(
            """
            import torch.nn.functional as F
            from torch import nn
            from torch.nn.utils.rnn import pad_sequence


            class LMHead(nn.Module):
                def __init__(self, dim, vocab_size, ignore_index=-100):
                    super().__init__()
                    self.proj = nn.Linear(dim, vocab_size)
                    self.ignore_index = ignore_index

                def forward(self, hidden, targets):
                    return F.cross_entropy(self.proj(hidden).transpose(1, 2), targets, ignore_index=self.ignore_index)


            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.head = LMHead(128, 1000)

                def forward(self, hidden, target_seqs):
                    return self.head(hidden, pad_sequence(target_seqs, batch_first=True, padding_value=1))
            """,
        ),
        # A command-line pad id (any number it may be is a token id).
        Invalid(
            """
            import argparse
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence


            def collate(batch, args):
                return pad_sequence(batch, batch_first=True, padding_value=args.pad_id)


            def run(args, model, batches):
                loss_fn = nn.CrossEntropyLoss()
                for batch in batches:
                    y = collate(batch, args)
                    out = model(y)
                    loss_fn(out.view(-1, out.size(-1)), y.view(-1)).backward()


            if __name__ == "__main__":
                parser = argparse.ArgumentParser()
                parser.add_argument("--pad_id", type=int, default=0)
                run(parser.parse_args(), nn.Identity(), [])
            """,
        ),
        # A Hugging Face tokenizer called with padding=True: input_ids are padded with its pad token id.
        Invalid(
            """
            import torch.nn.functional as F


            class CausalLMTrainer:
                def __init__(self, model, tokenizer):
                    self.model = model
                    self.tokenizer = tokenizer

                def loss(self, texts):
                    batch = self.tokenizer(texts, padding=True, truncation=True, return_tensors="pt")
                    ids = batch["input_ids"]
                    logits = self.model(ids[:, :-1])
                    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), ids[:, 1:].reshape(-1))
            """,
        ),
            # torch.full with a pad constant, rows filled up to their lengths, the loss in another function.
        Invalid(
            """
            import torch
            import torch.nn.functional as F

            PAD = 0


            def make_labels(token_lists):
                width = max(len(t) for t in token_lists)
                labels = torch.full((len(token_lists), width), PAD, dtype=torch.long)
                for row, tokens in enumerate(token_lists):
                    labels[row, : len(tokens)] = torch.tensor(tokens)
                return labels


            def token_loss(logits, labels):
                return F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))


            def train_step(model, token_lists):
                labels = make_labels(token_lists)
                return token_loss(model(labels), labels)
            """,
            fixed="""
            import torch
            import torch.nn.functional as F

            PAD = 0


            def make_labels(token_lists):
                width = max(len(t) for t in token_lists)
                labels = torch.full((len(token_lists), width), PAD, dtype=torch.long)
                for row, tokens in enumerate(token_lists):
                    labels[row, : len(tokens)] = torch.tensor(tokens)
                return labels


            def token_loss(logits, labels):
                return F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1), ignore_index=PAD)


            def train_step(model, token_lists):
                labels = make_labels(token_lists)
                return token_loss(model(labels), labels)
            """,
        ),
        # A vocabulary object's pad_index handed to a padding helper: a token id, never -100.
        Invalid(
            """
            import torch
            import torch.nn as nn

            SPECIALS = ["<bos>", "<pad>", "<eos>"]


            class Vocabulary:
                def __init__(self, words):
                    self.itos = SPECIALS + sorted(set(words))
                    self.stoi = {w: i for i, w in enumerate(self.itos)}
                    self.pad_index = self.stoi["<pad>"]


            def right_pad(rows, fill):
                width = max(map(len, rows))
                return torch.tensor([r + [fill] * (width - len(r)) for r in rows])


            def sequence_loss(decoder, vocab, rows):
                criterion = nn.CrossEntropyLoss()
                targets = right_pad(rows, vocab.pad_index)
                scores = decoder(targets)
                return criterion(scores.reshape(-1, scores.size(-1)), targets.reshape(-1))
            """,
        ),
        # A collate function's pad id defaulting to a class attribute; the DataLoader passes the batch alone.
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            from torch.utils.data import DataLoader


            class Settings:
                pad_token_id = 2
                batch_size = 16


            def collate(samples, pad_id=Settings.pad_token_id):
                longest = max(len(s) for s in samples)
                batch = torch.full((len(samples), longest), pad_id, dtype=torch.long)
                for i, s in enumerate(samples):
                    batch[i, : len(s)] = torch.tensor(s)
                return batch


            def fit(model, samples):
                for batch in DataLoader(samples, batch_size=Settings.batch_size, collate_fn=collate):
                    logits = model(batch[:, :-1])
                    loss = F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten())
                    loss.backward()
            """,
            fixed="""
            import torch
            import torch.nn.functional as F
            from torch.utils.data import DataLoader


            class Settings:
                pad_token_id = 2
                batch_size = 16


            def collate(samples, pad_id=Settings.pad_token_id):
                longest = max(len(s) for s in samples)
                batch = torch.full((len(samples), longest), pad_id, dtype=torch.long)
                for i, s in enumerate(samples):
                    batch[i, : len(s)] = torch.tensor(s)
                return batch


            def fit(model, samples):
                for batch in DataLoader(samples, batch_size=Settings.batch_size, collate_fn=collate):
                    logits = model(batch[:, :-1])
                    loss = F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten(), ignore_index=2)
                    loss.backward()
            """,
        ),
            # A dict batch from a collate_fn, moved to the device entry by entry.
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            from torch.utils.data import DataLoader

            PAD_ID = 0


            def collate(samples):
                ids = pad_sequence([torch.tensor(s) for s in samples], batch_first=True, padding_value=PAD_ID)
                return {"input_ids": ids[:, :-1], "labels": ids[:, 1:]}


            def train(model, samples, device):
                for batch in DataLoader(samples, batch_size=8, collate_fn=collate):
                    batch = {k: v.to(device) for k, v in batch.items()}
                    logits = model(batch["input_ids"])
                    loss = F.cross_entropy(logits.view(-1, logits.size(-1)), batch["labels"].view(-1))
                    loss.backward()
            """,
            fixed="""
            import torch
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            from torch.utils.data import DataLoader

            PAD_ID = 0


            def collate(samples):
                ids = pad_sequence([torch.tensor(s) for s in samples], batch_first=True, padding_value=PAD_ID)
                return {"input_ids": ids[:, :-1], "labels": ids[:, 1:]}


            def train(model, samples, device):
                for batch in DataLoader(samples, batch_size=8, collate_fn=collate):
                    batch = {k: v.to(device) for k, v in batch.items()}
                    logits = model(batch["input_ids"])
                    loss = F.cross_entropy(logits.view(-1, logits.size(-1)), batch["labels"].view(-1), ignore_index=PAD_ID)
                    loss.backward()
            """,
        ),
        # A collator class instance given to the DataLoader; its config's pad id pads the labels.
        Invalid(
            """
            from dataclasses import dataclass
            import torch
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            from torch.utils.data import DataLoader


            @dataclass
            class TrainConfig:
                vocab_size: int = 1000
                pad_token_id: int = 0
                lr: float = 3e-4


            class Collator:
                def __init__(self, cfg: TrainConfig):
                    self.cfg = cfg

                def __call__(self, batch):
                    ids = pad_sequence([torch.tensor(b) for b in batch], batch_first=True, padding_value=self.cfg.pad_token_id)
                    return {"input_ids": ids[:, :-1], "labels": ids[:, 1:]}


            def train(model, loader):
                criterion = nn.CrossEntropyLoss()
                for batch in loader:
                    logits = model(batch["input_ids"])
                    loss = criterion(logits.view(-1, logits.size(-1)), batch["labels"].reshape(-1))
                    loss.backward()


            if __name__ == "__main__":
                cfg = TrainConfig()
                loader = DataLoader([], batch_size=2, collate_fn=Collator(cfg))
                train(nn.Identity(), loader)
            """,
            fixed="""
            from dataclasses import dataclass
            import torch
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            from torch.utils.data import DataLoader


            @dataclass
            class TrainConfig:
                vocab_size: int = 1000
                pad_token_id: int = 0
                lr: float = 3e-4


            class Collator:
                def __init__(self, cfg: TrainConfig):
                    self.cfg = cfg

                def __call__(self, batch):
                    ids = pad_sequence([torch.tensor(b) for b in batch], batch_first=True, padding_value=self.cfg.pad_token_id)
                    return {"input_ids": ids[:, :-1], "labels": ids[:, 1:]}


            def train(model, loader):
                criterion = nn.CrossEntropyLoss(ignore_index=0)
                for batch in loader:
                    logits = model(batch["input_ids"])
                    loss = criterion(logits.view(-1, logits.size(-1)), batch["labels"].reshape(-1))
                    loss.backward()


            if __name__ == "__main__":
                cfg = TrainConfig()
                loader = DataLoader([], batch_size=2, collate_fn=Collator(cfg))
                train(nn.Identity(), loader)
            """,
        ),
        # A command-line label pad defaulting to 0.
        Invalid(
            """
            import argparse
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence


            def collate(batch, args):
                ys = pad_sequence([b[1] for b in batch], batch_first=True, padding_value=args.label_pad)
                return ys


            def train(model, batches, args):
                crit = nn.CrossEntropyLoss()
                for b in batches:
                    y = collate(b, args)
                    logits = model(y)
                    crit(logits.view(-1, logits.size(-1)), y.view(-1)).backward()


            if __name__ == "__main__":
                p = argparse.ArgumentParser()
                p.add_argument("--label_pad", type=int, default=0)
                train(nn.Identity(), [], p.parse_args())
            """,
        ),
            # A dataset's __getitem__ pads every sample to a fixed length; the DataLoader's default collate stacks them.
        Invalid(
            """
            import torch
            import torch.nn as nn
            from torch.utils.data import Dataset, DataLoader

            PAD = 0


            class LMDataset(Dataset):
                def __init__(self, rows, max_len=32):
                    self.rows = rows
                    self.max_len = max_len

                def __len__(self):
                    return len(self.rows)

                def __getitem__(self, i):
                    ids = self.rows[i][: self.max_len]
                    ids = ids + [PAD] * (self.max_len - len(ids))
                    ids = torch.tensor(ids)
                    return ids[:-1], ids[1:]


            def train(model, rows):
                loader = DataLoader(LMDataset(rows), batch_size=16, shuffle=True)
                crit = nn.CrossEntropyLoss()
                for x, y in loader:
                    out = model(x)
                    crit(out.view(-1, out.size(-1)), y.view(-1)).backward()
            """,
            fixed="""
            import torch
            import torch.nn as nn
            from torch.utils.data import Dataset, DataLoader

            PAD = 0


            class LMDataset(Dataset):
                def __init__(self, rows, max_len=32):
                    self.rows = rows
                    self.max_len = max_len

                def __len__(self):
                    return len(self.rows)

                def __getitem__(self, i):
                    ids = self.rows[i][: self.max_len]
                    ids = ids + [PAD] * (self.max_len - len(ids))
                    ids = torch.tensor(ids)
                    return ids[:-1], ids[1:]


            def train(model, rows):
                loader = DataLoader(LMDataset(rows), batch_size=16, shuffle=True)
                crit = nn.CrossEntropyLoss(ignore_index=0)
                for x, y in loader:
                    out = model(x)
                    crit(out.view(-1, out.size(-1)), y.view(-1)).backward()
            """,
        ),
        # A minibatch of whole rows drawn by integer position from a padded tensor keeps its
        # padding (pad_sequence's 0 against the default -100).
        Invalid(
            """
            import torch
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence

            tokens = pad_sequence([torch.tensor(s) for s in corpus], batch_first=True)
            criterion = nn.CrossEntropyLoss()
            for it in range(100):
                rows = torch.randint(0, tokens.size(0), (32,))
                batch = tokens[rows]
                out = net(batch[:, :-1])
                criterion(out.flatten(0, 1), batch[:, 1:].flatten()).backward()
            """,
            fixed="""
            import torch
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence

            tokens = pad_sequence([torch.tensor(s) for s in corpus], batch_first=True)
            criterion = nn.CrossEntropyLoss(ignore_index=0)
            for it in range(100):
                rows = torch.randint(0, tokens.size(0), (32,))
                batch = tokens[rows]
                out = net(batch[:, :-1])
                criterion(out.flatten(0, 1), batch[:, 1:].flatten()).backward()
            """,
        ),
        # The same with a shuffled permutation's first rows.
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence


            def epoch(net, seqs, targets_list):
                targets = pad_sequence(targets_list, batch_first=True, padding_value=-100)
                order = torch.randperm(targets.size(0))
                for start in range(0, len(order), 16):
                    pick = order[start : start + 16]
                    out = net(seqs, pick)
                    F.cross_entropy(out.flatten(0, 1), targets[pick, :].flatten(), ignore_index=0).backward()
            """,
            fixed="""
            import torch
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence


            def epoch(net, seqs, targets_list):
                targets = pad_sequence(targets_list, batch_first=True, padding_value=-100)
                order = torch.randperm(targets.size(0))
                for start in range(0, len(order), 16):
                    pick = order[start : start + 16]
                    out = net(seqs, pick)
                    F.cross_entropy(out.flatten(0, 1), targets[pick, :].flatten(), ignore_index=-100).backward()
            """,
        ),
        # ignore_index read from a label map: the id of the "outside" tag, not the -100 padding
        # (no fix: the map lookup is what the author wrote, -100 may be meant elsewhere).
        Invalid(
            """
            import torch
            import torch.nn.functional as F

            TAGS = ["O", "B-LOC", "I-LOC"]
            TAG_IDS = {t: i for i, t in enumerate(TAGS)}


            def tag_loss(scores, tag_rows, width):
                gold = torch.full((len(tag_rows), width), -100)
                for r, tags in enumerate(tag_rows):
                    gold[r, : len(tags)] = torch.tensor(tags)
                return F.cross_entropy(scores.flatten(0, 1), gold.flatten(), ignore_index=TAG_IDS["O"])
            """,
        ),
        # A loader handed in from outside: its batches are what the module's one collate function
        # builds (targets padded with 0), and the loss ignores -100.
        Invalid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence


            def collate_pairs(pairs):
                src = pad_sequence([p[0] for p in pairs], batch_first=True)
                tgt = pad_sequence([p[1] for p in pairs], batch_first=True)
                return src, tgt


            def run_epoch(net, train_loader):
                ce = nn.CrossEntropyLoss()
                for src, tgt in train_loader:
                    out = net(src)
                    ce(out.flatten(0, 1), tgt.flatten()).backward()
            """,
            fixed="""
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence


            def collate_pairs(pairs):
                src = pad_sequence([p[0] for p in pairs], batch_first=True)
                tgt = pad_sequence([p[1] for p in pairs], batch_first=True)
                return src, tgt


            def run_epoch(net, train_loader):
                ce = nn.CrossEntropyLoss(ignore_index=0)
                for src, tgt in train_loader:
                    out = net(src)
                    ce(out.flatten(0, 1), tgt.flatten()).backward()
            """,
        ),
        # One batch handed in from outside is one of the module's collate batches: a dataset's
        # collate method re-pads a padding tokenizer's ids with its pad id, and the model the
        # step is handed (the module's one root nn.Module) ignores -100.
        Invalid(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence


            class CaptionData(torch.utils.data.Dataset):
                def __init__(self, captions, tokenizer):
                    self.captions = captions
                    self.tokenizer = tokenizer

                def collate(self, rows):
                    enc = self.tokenizer(rows, padding=True)
                    for key in enc:
                        enc[key] = pad_sequence(
                            [torch.tensor(ids) for ids in enc[key]], batch_first=True, padding_value=self.tokenizer.pad_token_id
                        )
                    return enc


            class CaptionLM(nn.Module):
                def __init__(self, body):
                    super().__init__()
                    self.body = body

                def forward(self, ids):
                    logits = self.body(ids[:, :-1])
                    return F.cross_entropy(logits.transpose(1, 2), ids[:, 1:])


            def train_step(model, batch, opt):
                loss = model(batch["input_ids"])
                loss.backward()
                opt.step()
            """,
        ),
        # A column of EOS appended with F.pad leaves the zero padding where it was.
        Invalid(
            """
            import torch
            import torch.nn.functional as F


            def encode(token_lists, width=64):
                out = torch.zeros(len(token_lists), width, dtype=torch.long)
                for i, toks in enumerate(token_lists):
                    out[i, : len(toks)] = torch.tensor(toks[:width])
                return out


            def lm_loss(net, token_lists, eos_id):
                text = encode(token_lists)
                targets = F.pad(text, (0, 1), value=eos_id)
                logits = net(text)
                return F.cross_entropy(logits.transpose(1, 2), targets[:, 1:])
            """,
            fixed="""
            import torch
            import torch.nn.functional as F


            def encode(token_lists, width=64):
                out = torch.zeros(len(token_lists), width, dtype=torch.long)
                for i, toks in enumerate(token_lists):
                    out[i, : len(toks)] = torch.tensor(toks[:width])
                return out


            def lm_loss(net, token_lists, eos_id):
                text = encode(token_lists)
                targets = F.pad(text, (0, 1), value=eos_id)
                logits = net(text)
                return F.cross_entropy(logits.transpose(1, 2), targets[:, 1:], ignore_index=0)
            """,
        ),
        # ignore_index read from a config where the loss is built (the dataclass default -100),
        # targets padded with another id where it is called.
        Invalid(
            """
            from dataclasses import dataclass

            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence


            @dataclass
            class TrainConfig:
                ignore_index: int = -100


            PAD_ID = 0


            class Objective(nn.Module):
                def __init__(self, cfg: TrainConfig):
                    super().__init__()
                    self.ce = nn.CrossEntropyLoss(ignore_index=cfg.ignore_index)

                def forward(self, logits, target_rows):
                    targets = pad_sequence(target_rows, batch_first=True, padding_value=PAD_ID)
                    return self.ce(logits.flatten(0, 1), targets.flatten())
            """,
        ),
        # Notebook style: a dataset padding with the tokenizer to a fixed length, the loader
        # iterated with enumerate at module level; the loss ignores -100.
        Invalid(
            """
            import torch.nn as nn
            from torch.utils.data import DataLoader, Dataset
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained("gpt2")


            class Headlines(Dataset):
                def __init__(self, rows):
                    self.rows = rows

                def __len__(self):
                    return len(self.rows)

                def __getitem__(self, i):
                    enc = tokenizer(self.rows[i], max_length=32, padding="max_length", return_tensors="pt")
                    return {"ids": enc.input_ids[0], "target": enc["input_ids"][0]}


            dl = DataLoader(Headlines(texts), batch_size=16)
            objective = nn.CrossEntropyLoss()
            for it, sample in enumerate(dl, 1):
                scores = net(sample["ids"])
                objective(scores.flatten(0, 1), sample["target"].flatten()).backward()
            """,
        ),
        # A loader handed in from outside, and no collate function here: its batches stack the
        # samples of the module's one dataset, whose targets are padded on the left with 0.
        Invalid(
            """
            import torch
            import torch.nn.functional as F


            class Sessions(torch.utils.data.Dataset):
                def __init__(self, sessions, width):
                    self.sessions, self.width = sessions, width

                def __len__(self):
                    return len(self.sessions)

                def __getitem__(self, i):
                    clicks = self.sessions[i][-self.width :]
                    gap = self.width - len(clicks)
                    history = [0] * gap + clicks[:-1] + [0]
                    nexts = [0] * gap + clicks[1:] + [0]
                    return torch.tensor(history), torch.tensor(nexts)


            def fit(recommender, train_loader, optim):
                for history, nexts in train_loader:
                    out = recommender(history)
                    F.cross_entropy(out.transpose(1, 2), nexts).backward()
                    optim.step()
            """,
            fixed="""
            import torch
            import torch.nn.functional as F


            class Sessions(torch.utils.data.Dataset):
                def __init__(self, sessions, width):
                    self.sessions, self.width = sessions, width

                def __len__(self):
                    return len(self.sessions)

                def __getitem__(self, i):
                    clicks = self.sessions[i][-self.width :]
                    gap = self.width - len(clicks)
                    history = [0] * gap + clicks[:-1] + [0]
                    nexts = [0] * gap + clicks[1:] + [0]
                    return torch.tensor(history), torch.tensor(nexts)


            def fit(recommender, train_loader, optim):
                for history, nexts in train_loader:
                    out = recommender(history)
                    F.cross_entropy(out.transpose(1, 2), nexts, ignore_index=0).backward()
                    optim.step()
            """,
        ),
        # A collate factory: the DataLoader gets the closure `make_batcher` returns, which pads
        # the targets with a module constant.
        Invalid(
            """
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            from torch.utils.data import DataLoader

            BLANK = 3


            def make_batcher(tokenize):
                def batcher(pairs):
                    xs = pad_sequence([tokenize(a) for a, _ in pairs], batch_first=True, padding_value=BLANK)
                    ys = pad_sequence([tokenize(b) for _, b in pairs], batch_first=True, padding_value=BLANK)
                    return xs, ys
                return batcher


            def fit(net, pairs, tokenize):
                ce = nn.CrossEntropyLoss()
                for xs, ys in DataLoader(pairs, batch_size=8, collate_fn=make_batcher(tokenize)):
                    ce(net(xs).flatten(0, 1), ys.flatten()).backward()
            """,
            fixed="""
            import torch.nn as nn
            from torch.nn.utils.rnn import pad_sequence
            from torch.utils.data import DataLoader

            BLANK = 3


            def make_batcher(tokenize):
                def batcher(pairs):
                    xs = pad_sequence([tokenize(a) for a, _ in pairs], batch_first=True, padding_value=BLANK)
                    ys = pad_sequence([tokenize(b) for _, b in pairs], batch_first=True, padding_value=BLANK)
                    return xs, ys
                return batcher


            def fit(net, pairs, tokenize):
                ce = nn.CrossEntropyLoss(ignore_index=BLANK)
                for xs, ys in DataLoader(pairs, batch_size=8, collate_fn=make_batcher(tokenize)):
                    ce(net(xs).flatten(0, 1), ys.flatten()).backward()
            """,
        ),
        # A vocabulary handed in: the module's one vocabulary class says "<pad>" is id 2
        # (its lookup reads the position in the specials), and the loss ignores 0 (`<s>`).
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence

            SPECIAL = ["<s>", "</s>", "<pad>"]


            class Lexicon:
                def __init__(self, words):
                    self.itos = SPECIAL + sorted(set(words) - set(SPECIAL))
                    self.stoi = {w: i for i, w in enumerate(self.itos)}

                def __getitem__(self, word):
                    return self.stoi.get(word, len(self.itos))


            def batch_targets(lex, sentences):
                rows = [torch.tensor([lex[w] for w in s]) for s in sentences]
                return pad_sequence(rows, batch_first=True, padding_value=lex["<pad>"])


            def loss_of(net, lex, sentences):
                targets = batch_targets(lex, sentences)
                return F.cross_entropy(net(targets).transpose(1, 2), targets, ignore_index=0)
            """,
            fixed="""
            import torch
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence

            SPECIAL = ["<s>", "</s>", "<pad>"]


            class Lexicon:
                def __init__(self, words):
                    self.itos = SPECIAL + sorted(set(words) - set(SPECIAL))
                    self.stoi = {w: i for i, w in enumerate(self.itos)}

                def __getitem__(self, word):
                    return self.stoi.get(word, len(self.itos))


            def batch_targets(lex, sentences):
                rows = [torch.tensor([lex[w] for w in s]) for s in sentences]
                return pad_sequence(rows, batch_first=True, padding_value=lex["<pad>"])


            def loss_of(net, lex, sentences):
                targets = batch_targets(lex, sentences)
                return F.cross_entropy(net(targets).transpose(1, 2), targets, ignore_index=2)
            """,
        ),
        # A progress bar yields what it wraps, and `next(iter(loader))` is one batch.
        Invalid(
            """
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            from torch.utils.data import DataLoader
            from tqdm.auto import tqdm


            def pad_batch(rows):
                return pad_sequence([r[:-1] for r in rows], batch_first=True), pad_sequence([r[1:] for r in rows], batch_first=True)


            def train(lm, corpus, opt):
                batches = DataLoader(corpus, batch_size=8, collate_fn=pad_batch)
                probe_x, probe_y = next(iter(batches))
                print(F.cross_entropy(lm(probe_x).transpose(1, 2), probe_y).item())
                for x, y in tqdm(batches, desc="train"):
                    F.cross_entropy(lm(x).transpose(1, 2), y).backward()
                    opt.step()
            """,
            fixed="""
            import torch.nn.functional as F
            from torch.nn.utils.rnn import pad_sequence
            from torch.utils.data import DataLoader
            from tqdm.auto import tqdm


            def pad_batch(rows):
                return pad_sequence([r[:-1] for r in rows], batch_first=True), pad_sequence([r[1:] for r in rows], batch_first=True)


            def train(lm, corpus, opt):
                batches = DataLoader(corpus, batch_size=8, collate_fn=pad_batch)
                probe_x, probe_y = next(iter(batches))
                print(F.cross_entropy(lm(probe_x).transpose(1, 2), probe_y, ignore_index=0).item())
                for x, y in tqdm(batches, desc="train"):
                    F.cross_entropy(lm(x).transpose(1, 2), y, ignore_index=0).backward()
                    opt.step()
            """,
        ),
        # A field stored into a tokenizer's encoding, popped off the batch before the loss.
        Invalid(
            """
            import torch.nn as nn
            from torch.utils.data import DataLoader


            class PairCollator:
                def __init__(self, tokenizer):
                    self.tokenizer = tokenizer

                def __call__(self, rows):
                    enc = self.tokenizer([r["q"] for r in rows], padding=True, return_tensors="pt")
                    out = self.tokenizer([r["a"] for r in rows], padding=True, return_tensors="pt")
                    enc["labels"] = out["input_ids"]
                    return enc


            class Loop:
                def __init__(self, net, tokenizer):
                    self.net = net
                    self.tokenizer = tokenizer
                    self.ce = nn.CrossEntropyLoss()

                def loss(self, batch):
                    labels = batch.pop("labels")
                    logits = self.net(**batch).logits
                    return self.ce(logits.flatten(0, 1), labels.flatten())

                def run(self, rows):
                    for batch in DataLoader(rows, batch_size=4, collate_fn=PairCollator(self.tokenizer)):
                        self.loss(batch).backward()
            """,
        ),
    ]

def _number(value) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)
