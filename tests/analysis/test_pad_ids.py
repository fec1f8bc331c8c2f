"""Where pad values come from: vocabularies, class and instance attributes, command-line
options, defaults every caller keeps, and tensors padded by hand (torch.zeros filled row by row,
torch.cat, F.pad)."""

from helpers import analyse, env, function


def _loss(analysis):
    (site,) = analysis.sites("loss_sites")
    return site


def test_a_vocabulary_built_by_enumerating_specials_gives_the_pad_position():
    analysis, _ = analyse(
        """
        SPECIALS = ["<unk>", "<pad>", "<bos>"]

        def build(words):
            itos = SPECIALS + sorted(set(words))
            stoi = {tok: i for i, tok in enumerate(itos)}
            from_one = {tok: i for i, tok in enumerate(SPECIALS, 1)}
            reverse = {i: tok for i, tok in enumerate(itos)}
            literal = {"[PAD]": 3, "[CLS]": 4}
            pad = stoi["<pad>"]
            return pad
        """
    )
    assert env(analysis, "build", "pad").int_value == 1
    assert env(analysis, "build", "pad").token_id
    assert env(analysis, "build", "from_one").vocabulary.id_of("<pad>") == 2
    assert env(analysis, "build", "reverse").vocabulary is None  # ids -> tokens, not a vocabulary
    assert env(analysis, "build", "literal").vocabulary.id_of("[PAD]") == 3
    # The list of specials is a module constant: functions see its positions.
    from attnlint.analysis.losses import vocabulary_of

    assert vocabulary_of(analysis.constants["SPECIALS"]).id_of("<bos>") == 2


def test_a_lookup_of_the_pad_token_in_a_vocabulary_we_cannot_read_is_a_token_id():
    analysis, _ = analyse(
        """
        PAD_TOKEN = "<pad>"

        def f(vocab, tokenizer, specials, config):
            a = vocab[PAD_TOKEN]
            b = vocab.stoi["<pad>"]
            c = tokenizer.convert_tokens_to_ids("[PAD]")
            d = specials.index("<pad>")
            e = vocab["hello"]
            g = config["pad_token_id"]
            return a
        """
    )
    for name in "abcdg":
        value = env(analysis, "f", name)
        assert value.token_id and value.int_value is None, name
    assert not env(analysis, "f", "e").token_id  # not the pad token


def test_pad_ids_from_instance_and_class_attributes():
    analysis, _ = analyse(
        """
        import torch.nn.functional as F
        from torch.nn.utils.rnn import pad_sequence

        class Vocab:
            def __init__(self, words):
                self.itos = ["<pad>", "<unk>", "<s>"] + sorted(words)
                self.stoi = {w: i for i, w in enumerate(self.itos)}
                self.pad_index = self.stoi["<s>"]

        class Bytes:
            pad_id = 256

        vocab = Vocab(["a", "b"])
        PAD = vocab.pad_index

        def from_instance(seqs):
            return pad_sequence(seqs, padding_value=PAD)

        def from_class(seqs):
            return pad_sequence(seqs, padding_value=Bytes.pad_id)
        """
    )
    assert analysis.constants["PAD"].int_value == 2
    assert function(analysis, "from_instance").returns[0].padding.value == 2
    assert function(analysis, "from_class").returns[0].padding.value == 256


def test_a_command_line_option_is_a_token_id_only_when_its_default_is_one():
    source = """
        import argparse
        from torch.nn.utils.rnn import pad_sequence

        def collate(rows, args):
            return pad_sequence(rows, padding_value=args.pad_idx)

        if __name__ == "__main__":
            parser = argparse.ArgumentParser()
            parser.add_argument("--pad-idx", type=int, default={default})
            args = parser.parse_args()
            collate([], args)
        """
    analysis, _ = analyse(source.format(default="0"))
    padding = function(analysis, "collate").returns[0].padding
    # The command line may give another number: only "a token id" is kept, not 0.
    assert padding.token_id and padding.value is None
    analysis, _ = analyse(source.format(default="-100"))
    assert not function(analysis, "collate").returns[0].padding.token_id


def test_names_alone_make_a_token_id_only_for_pad_ids_without_a_visible_number():
    analysis, _ = analyse(
        """
        from torch.nn.utils.rnn import pad_sequence

        def a(rows, tokenizer):
            return pad_sequence(rows, padding_value=tokenizer.pad_token_id)

        def b(rows, pad_idx):
            return pad_sequence(rows, padding_value=pad_idx)

        def c(rows, pad_idx=-100):
            return pad_sequence(rows, padding_value=pad_idx)

        def d(rows, collator):
            return pad_sequence(rows, padding_value=collator.label_pad_token_id)

        def e(rows, fill):
            return pad_sequence(rows, padding_value=fill)
        """
    )
    assert function(analysis, "a").returns[0].padding.token_id
    assert function(analysis, "b").returns[0].padding.token_id
    assert not function(analysis, "c").returns[0].padding.token_id  # its default may be what runs
    assert not function(analysis, "d").returns[0].padding.token_id  # HF's label pad is -100
    assert not function(analysis, "e").returns[0].padding.token_id


def test_a_zeros_tensor_filled_row_by_row_up_to_each_length_is_padded():
    analysis, _ = analyse(
        """
        import torch

        def right(seqs, n):
            out = torch.zeros(len(seqs), n, dtype=torch.long)
            for i, s in enumerate(seqs):
                out[i, : len(s)] = torch.tensor(s)
            return out

        def left(seqs, n):
            out = torch.ones(len(seqs), n, dtype=torch.long)
            for i, s in enumerate(seqs):
                out[i, -len(s) :] = torch.tensor(s)
            return out

        def keep_mask(lengths, n):
            keep = torch.zeros(len(lengths), n)
            for i, k in enumerate(lengths):
                keep[i, :k] = 1
            return keep

        def block(x, y):
            out = torch.zeros(4, 8)
            out[:, :4] = y
            return out
        """
    )
    assert function(analysis, "right").returns[0].padding.value == 0
    assert function(analysis, "left").returns[0].padding.value == 1
    assert not function(analysis, "keep_mask").returns[0].padded  # a mask being built
    assert not function(analysis, "block").returns[0].padded  # a fixed block, not row lengths


def test_concatenation_keeps_the_padding_of_its_padded_part():
    analysis, _ = analyse(
        """
        import torch
        from torch.nn.utils.rnn import pad_sequence

        def f(texts, image_tokens):
            text = pad_sequence(texts, batch_first=True, padding_value=0)
            both = torch.cat((text[:, 1:], image_tokens + 100), dim=1)
            return both
        """
    )
    assert env(analysis, "f", "both").padding.value == 0


def test_functional_pad_with_a_pad_id_is_padding_and_zero_padding_is_not():
    analysis, _ = analyse(
        """
        import torch.nn.functional as F

        def ids(row, n, tokenizer):
            return F.pad(row, (0, n - row.size(0)), value=tokenizer.pad_token_id)

        def image(x):
            return F.pad(x, (1, 1, 1, 1))
        """
    )
    assert function(analysis, "ids").returns[0].padding.token_id
    assert not function(analysis, "image").returns[0].padded


def test_a_default_every_caller_keeps_is_the_parameter_value():
    source = """
        import torch.nn.functional as F
        from torch import nn

        class Wrapper(nn.Module):
            def __init__(self, net, ignore_index=-100, pad_value=0):
                super().__init__()
                self.net = net
                self.ignore_index = ignore_index

            def forward(self, x):
                return F.cross_entropy(self.net(x[:, :-1]).transpose(1, 2), x[:, 1:], ignore_index=self.ignore_index)

        def make(net):
            return Wrapper(net, pad_value=1)

        {other}
        """
    analysis, _ = analyse(source.format(other=""))
    assert _loss(analysis).ignore_index == -100
    # One construction passes another value: no single value holds.
    other = "def other(net):\n            return Wrapper(net, ignore_index=0)"
    analysis, _ = analyse(source.format(other=other))
    assert _loss(analysis).ignore_index is None


def test_a_vocabulary_and_an_instance_attribute_imported_from_another_module(tmp_path):
    from pathlib import Path

    import libcst as cst

    from attnlint.analysis import analyze_module
    from attnlint.analysis.project import Project

    package = tmp_path / "proj"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "data.py").write_text(
        "from torch.nn.utils.rnn import pad_sequence\n"
        "stoi = {w: i for i, w in enumerate(['<s>', '<pad>'] + WORDS)}\n"
        "class Vocab:\n"
        "    def __init__(self):\n"
        "        self.pad_id = stoi['<pad>']\n"
        "vocab = Vocab()\n"
        "PAD = vocab.pad_id\n"
        "def collate(batch):\n"
        "    return pad_sequence(batch, batch_first=True, padding_value=PAD)\n"
    )
    train = package / "train.py"
    train.write_text(
        "import torch.nn.functional as F\n"
        "from .data import collate, stoi\n"
        "def loss(model, rows):\n"
        "    batch = collate(rows)\n"
        "    return F.cross_entropy(model(batch), batch, ignore_index=stoi['<s>'])\n"
    )
    analysis = analyze_module(cst.parse_module(train.read_text()), project=Project([tmp_path]), path=Path(train))
    (site,) = analysis.sites("loss_sites")
    assert site.targets.padding.value == 1
    assert site.ignore_index == 0


def test_a_tokenizer_that_pads_gives_input_ids_padded_with_its_pad_token_id():
    analysis, _ = analyse(
        """
        def f(tokenizer, texts, features):
            enc = tokenizer(texts, padding=True, return_tensors="pt")
            by_key = enc["input_ids"]
            by_attr = enc.input_ids
            keep = enc["attention_mask"]
            padded = tokenizer.pad(features, return_tensors="pt").input_ids
            unpadded = tokenizer(texts, return_tensors="pt").input_ids
            return by_key
        """
    )
    for name in ("by_key", "by_attr", "padded"):
        padding = env(analysis, "f", name).padding
        assert padding.token_id and padding.value is None, name
    assert not env(analysis, "f", "keep").padded
    assert not env(analysis, "f", "unpadded").padded


def test_a_tokenizer_class_of_the_checked_code_pads_as_its_code_says():
    analysis, _ = analyse(
        """
        import torch

        class Tokenizer:
            def __call__(self, texts, padding=False):
                return torch.tensor([[ord(c) for c in t] for t in texts])

        def f(texts):
            tokenizer = Tokenizer()
            ids = tokenizer(texts, padding=True)
            return ids
        """
    )
    assert not env(analysis, "f", "ids").padded


def test_a_helper_looking_tokens_up_is_summarised_per_token():
    analysis, _ = analyse(
        """
        stoi = {t: i for i, t in enumerate(["<s>", "<pad>"])}

        def tok_id(t):
            return stoi[t]

        def f():
            bos = tok_id("<s>")
            pad = tok_id("<pad>")
            return pad
        """
    )
    assert env(analysis, "f", "bos").int_value == 0
    assert env(analysis, "f", "pad").int_value == 1


def test_rows_of_data_written_into_a_padded_tensor_keep_its_padding_and_a_scalar_store_rewrites_it():
    analysis, _ = analyse(
        """
        import torch

        PAD = 3

        def f(rows, n):
            filled = torch.full((len(rows), n), PAD, dtype=torch.long)
            for i, r in enumerate(rows):
                filled[i, : len(r)] = torch.tensor(r)
            masked = torch.full((len(rows), n), PAD, dtype=torch.long)
            masked[masked == PAD] = -100
            block = torch.full((len(rows), n), PAD, dtype=torch.long)
            block[:, :4] = torch.zeros(len(rows), 4)
            return filled
        """
    )
    assert env(analysis, "f", "filled").padding.value == 3
    assert env(analysis, "f", "masked").padding.value == -100
    # A fixed block of columns is not each row's own length: what the padding holds is unknown.
    assert env(analysis, "f", "block").padding.value is None


def test_an_attribute_named_as_a_pad_id_is_a_token_id_through_a_helper():
    analysis, _ = analyse(
        """
        import torch

        def pad_rows(rows, fill):
            n = max(map(len, rows))
            return torch.tensor([r + [fill] * (n - len(r)) for r in rows])

        def f(vocab, rows):
            pad = vocab.pad_index
            ids = pad_rows(rows, vocab.pad_index)
            size = vocab.hidden_size
            return ids
        """
    )
    assert env(analysis, "f", "pad").token_id
    assert not env(analysis, "f", "size").token_id
    padding = env(analysis, "f", "ids").padding
    assert padding.token_id and padding.value is None


def test_a_parameter_the_call_leaves_out_holds_its_default_in_that_calls_summary():
    analysis, _ = analyse(
        """
        import torch
        from torch.utils.data import DataLoader

        class Config:
            pad_token_id = 5

        def collate(batch, pad_id=Config.pad_token_id):
            out = torch.full((len(batch), 8), pad_id, dtype=torch.long)
            for i, b in enumerate(batch):
                out[i, : len(b)] = torch.tensor(b)
            return out

        def f(data):
            for ids in DataLoader(data, collate_fn=collate):
                return ids

        def g(data):
            return collate(data, pad_id=-100)
        """
    )
    assert function(analysis, "f").returns[0].padding.value == 5
    assert function(analysis, "g").returns[0].padding.value == -100


def test_a_padded_batch_stays_padded_through_moves_and_sums_and_a_number_added_shifts_its_pad():
    analysis, _ = analyse(
        """
        import torch
        import torch.nn as nn
        from torch.nn.utils.rnn import pad_sequence

        def f(seqs):
            emb, pos = nn.Embedding(10, 4), nn.Embedding(64, 4)
            ids = pad_sequence(seqs, batch_first=True, padding_value=2)
            time_major = ids.transpose(0, 1)
            permuted = ids.permute(1, 0)
            summed = emb(ids) + pos(torch.arange(ids.size(1)))
            shifted = ids + 1
            lowered = ids - 2
            return ids
        """
    )
    assert env(analysis, "f", "time_major").padding.value == 2
    assert env(analysis, "f", "permuted").padding.value == 2
    summed = env(analysis, "f", "summed").padding
    assert summed is not None and summed.value is None
    assert env(analysis, "f", "shifted").padding.value == 3
    assert env(analysis, "f", "lowered").padding.value == 0


def test_dict_batches_keep_their_entries_and_stores_into_an_entry_change_it():
    analysis, _ = analyse(
        """
        import torch
        from torch.nn.utils.rnn import pad_sequence

        def f(seqs, device):
            ids = pad_sequence(seqs, batch_first=True, padding_value=4)
            batch = {"input_ids": ids, "labels": ids.clone()}
            moved = {k: v.to(device) for k, v in batch.items()}
            labels = moved["labels"]
            got = moved.get("input_ids")
            batch["labels"][batch["labels"] == 4] = -100
            masked = batch["labels"]
            batch["labels"] = ids
            replaced = batch["labels"]
            batch.update(extra=ids)
            updated = batch
            return labels
        """
    )
    assert env(analysis, "f", "labels").padding.value == 4
    assert env(analysis, "f", "got").padding.value == 4
    assert env(analysis, "f", "masked").padding.value == -100
    assert env(analysis, "f", "replaced").padding.value == 4
    # A method that may change the dict: its entries are no longer known.
    assert env(analysis, "f", "updated").entries == ()


def test_a_collator_instance_given_to_a_data_loader_makes_its_batches():
    analysis, _ = analyse(
        """
        import torch
        from torch.nn.utils.rnn import pad_sequence
        from torch.utils.data import DataLoader

        class Collator:
            def __init__(self, pad):
                self.pad = 7

            def __call__(self, samples):
                return {"ids": pad_sequence(samples, batch_first=True, padding_value=self.pad)}

        def f(data):
            for batch in DataLoader(data, collate_fn=Collator(7)):
                return batch["ids"]
        """
    )
    assert function(analysis, "f").returns[0].padding.value == 7


def test_a_normalised_padded_batch_is_still_padded():
    analysis, _ = analyse(
        """
        import torch.nn as nn
        from torch.nn.utils.rnn import pad_sequence

        def f(seqs):
            norm, act = nn.LayerNorm(8), nn.GELU()
            x = pad_sequence(seqs, batch_first=True)
            normed = norm(x)
            activated = act(normed)
            return x
        """
    )
    assert env(analysis, "f", "normed").padded
    assert env(analysis, "f", "activated").padded


def test_token_ids_a_function_embeds_and_tests_against_the_pad_id_are_padded():
    analysis, _ = analyse(
        """
        import torch.nn as nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(10, 4)

            def forward(self, tokens, other, ids):
                x = self.embed(tokens)
                keep = tokens.ne(self.pad_id)
                y = self.embed(ids)
                ids = ids[:, 1:]
                drop = ids == self.pad_id
                return other == self.pad_id
        """
    )
    params = function(analysis, "forward").params
    assert params["tokens"].padded and params["tokens"].padding.value is None
    assert not params["other"].padded  # compared, but not token ids the function embeds
    assert not params["ids"].padded  # the comparison reads a rebinding of it


def test_a_data_loader_without_collate_fn_stacks_what_the_datasets_getitem_returns():
    analysis, _ = analyse(
        """
        import torch
        from torch.utils.data import DataLoader, Dataset

        class Rows(Dataset):
            def __getitem__(self, i):
                ids = self.rows[i] + [9] * (16 - len(self.rows[i]))
                return torch.tensor(ids), {"labels": torch.tensor(ids)}

        class Lists(Dataset):
            def __getitem__(self, i):
                return self.rows[i] + [9] * (16 - len(self.rows[i]))

        def f(rows):
            for x, extra in DataLoader(Rows(rows), batch_size=4):
                return x, extra["labels"]

        def g(rows):
            for x in DataLoader(Lists(rows)):
                return x
        """
    )
    x, labels = function(analysis, "f").returns[0].elements
    assert x.padding.value == 9 and labels.padding.value == 9
    # The default collate transposes lists of numbers: not followed.
    assert not function(analysis, "g").returns[0].padded


def test_a_label_map_without_a_pad_token_is_read_by_name_in_functions():
    analysis, _ = analyse(
        """
        TAGS = ["O", "B-LOC", "I-LOC"]
        TAG_IDS = {t: i for i, t in enumerate(TAGS)}

        def f():
            outside = TAG_IDS["O"]
            inside = TAG_IDS["I-LOC"]
            return outside
        """
    )
    assert env(analysis, "f", "outside").int_value == 0
    assert env(analysis, "f", "inside").int_value == 2


def test_a_full_tensor_of_a_written_number_filled_row_by_row_is_padded_with_it():
    analysis, _ = analyse(
        """
        import torch

        def f(rows, n):
            labels = torch.full((len(rows), n), -100)
            biases = torch.full((len(rows), n), -1e9)
            for i, r in enumerate(rows):
                labels[i, : len(r)] = torch.tensor(r)
                biases[i, : len(r)] = torch.tensor(r)
            return labels
        """
    )
    assert env(analysis, "f", "labels").padding.value == -100.0
    assert env(analysis, "f", "biases").padding is None  # not an integer id


def test_a_full_tensor_of_the_pad_tokens_id_in_a_label_map_is_padded_with_it():
    analysis, _ = analyse(
        """
        import torch

        LABELS = ["<pad>", "O", "B-PER"]
        LABEL2ID = {l: i for i, l in enumerate(LABELS)}

        def f(n):
            labels = torch.full((4, n), LABEL2ID["<pad>"])
            outside = torch.full((4, n), LABEL2ID["O"])
            return labels, outside
        """
    )
    assert env(analysis, "f", "labels").padding.value == 0.0
    assert env(analysis, "f", "outside").padding is None  # the id of a real label


def test_rows_gathered_by_integer_position_keep_the_padding():
    analysis, _ = analyse(
        """
        import torch
        from torch.nn.utils.rnn import pad_sequence

        def f(seqs, keep):
            y = pad_sequence(seqs, batch_first=True)
            picked = y[torch.randint(0, y.size(0), (8,))]
            shuffled = y[torch.randperm(y.size(0))[:8], :]
            selected = y[keep]
            tokens = y[:, torch.randint(0, 4, (8,))]
            return picked
        """
    )
    assert env(analysis, "f", "picked").padding.value == 0.0
    assert env(analysis, "f", "shuffled").padding.value == 0.0
    assert env(analysis, "f", "selected").padding is None  # maybe a boolean selection
    assert env(analysis, "f", "tokens").padding is None


def test_a_loader_parameter_yields_the_batches_of_the_one_collate_function():
    source = """
        import torch
        from torch.nn.utils.rnn import pad_sequence

        IGNORE = -100

        def collate(features, pad_id):
            ids = pad_sequence([f[0] for f in features], batch_first=True, padding_value=pad_id)
            labels = pad_sequence([f[1] for f in features], batch_first=True, padding_value=IGNORE)
            return ids, labels

        def evaluate(model, val_loader, pairs):
            for ids, labels in val_loader:
                model(ids)
            for a, b in pairs:
                model(a)
            return labels
        """
    analysis, _ = analyse(source)
    assert env(analysis, "evaluate", "labels").padding.value == -100.0
    assert env(analysis, "evaluate", "b").padding is None  # not named as a loader
    # A second collate function: which one built the loader is not shown.
    analysis, _ = analyse(source + "\n        def collate_eval(features):\n            return features\n")
    assert env(analysis, "evaluate", "labels").padding is None


def test_a_batch_parameter_is_a_batch_of_a_dataset_collate_method():
    analysis, _ = analyse(
        """
        import torch
        from torch.nn.utils.rnn import pad_sequence

        class Data:
            def collate(self, rows):
                enc = self.tokenizer(rows, padding=True)
                for key in enc:
                    enc[key] = pad_sequence(enc[key], batch_first=True, padding_value=self.tokenizer.pad_token_id)
                return enc

        def step(model, batch, batch_size):
            ids = batch["input_ids"]
            return ids
        """
    )
    ids = env(analysis, "step", "ids")
    assert ids.padding is not None and ids.padding.token_id  # re-padded with the same id: kept
    assert env(analysis, "step", "batch_size").padding is None


def test_a_column_appended_with_another_token_keeps_the_padding():
    analysis, _ = analyse(
        """
        import torch.nn.functional as F
        from torch.nn.utils.rnn import pad_sequence

        def f(seqs, eos_id, keep):
            y = pad_sequence(seqs, batch_first=True)
            with_eos = F.pad(y, (0, 1), value=eos_id)
            mask = F.pad(keep, (0, 1), value=True)
            return with_eos
        """
    )
    assert env(analysis, "f", "with_eos").padding.value == 0.0
    assert env(analysis, "f", "mask").padding is None


def test_a_loss_module_keeps_the_ignore_index_read_where_it_was_built():
    analysis, _ = analyse(
        """
        from dataclasses import dataclass
        import torch.nn as nn

        @dataclass
        class Config:
            ignore_index: int = -7

        class Head(nn.Module):
            def __init__(self, cfg: Config):
                super().__init__()
                self.ce = nn.CrossEntropyLoss(ignore_index=cfg.ignore_index)

            def forward(self, logits, targets):
                return self.ce(logits, targets)
        """
    )
    (site,) = analysis.sites("loss_sites")
    assert site.ignore_index == -7  # `cfg` is __init__'s, not in scope in forward


def test_enumerate_yields_positions_and_the_items_of_what_it_enumerates():
    analysis, _ = analyse(
        """
        import torch.nn.functional as F
        from torch.nn.utils.rnn import pad_sequence

        def f(rows, logits):
            batches = [pad_sequence(rows, batch_first=True)]
            for step, targets in enumerate(batches, 1):
                F.cross_entropy(logits, targets)
        """
    )
    assert _loss(analysis).targets.padding.value == 0.0


def test_a_loader_handed_in_stacks_the_module_dataset_samples_when_no_collate_is_written():
    source = """
        import torch
        import torch.nn.functional as F

        class Rows(torch.utils.data.Dataset):
            def __getitem__(self, i):
                row = self.rows[i]
                return torch.tensor(row + [5] * (self.width - len(row)))

        def fit(net, loader):
            for targets in loader:
                F.cross_entropy(net(targets), targets)
        """
    analysis, _ = analyse(source)
    assert _loss(analysis).targets.padding.value == 5.0
    # A loader somewhere in the module with its own collate_fn: not followed.
    analysis, _ = analyse(source + "\n        other = DataLoader(ds, collate_fn=merge)\n")
    assert not _loss(analysis).targets.padded


def test_a_collate_factory_gives_the_batches_of_the_closure_it_returns():
    from attnlint.analysis.losses import returned_closure
    import libcst as cst

    analysis, module = analyse(
        """
        import torch.nn.functional as F
        from torch.nn.utils.rnn import pad_sequence

        def make_collate(vocab):
            def collate(batch):
                return pad_sequence(batch, batch_first=True, padding_value=7)
            return collate

        def not_a_factory(flag):
            def inner(batch):
                return batch
            if flag:
                return inner
            return None

        def evaluate(net, val_loader):
            for targets in val_loader:
                F.cross_entropy(net(targets), targets)
        """
    )
    assert _loss(analysis).targets.padding.value == 7.0
    defs = {s.name.value: s for s in module.body if isinstance(s, cst.FunctionDef)}
    assert returned_closure(defs["make_collate"]).name.value == "collate"
    assert returned_closure(defs["not_a_factory"]) is None  # it may return None


def test_a_collate_closure_reads_the_pad_id_its_factory_bound_for_the_call():
    analysis, _ = analyse(
        """
        from dataclasses import dataclass
        import torch
        import torch.nn.functional as F
        from torch.utils.data import DataLoader

        @dataclass
        class Config:
            pad_token_id: int = 3

        def make_collate(config: Config, shift):
            pad = config.pad_token_id + shift

            def collate(batch):
                ids = torch.full((len(batch), 8), pad, dtype=torch.long)
                return ids[:, :-1], ids[:, 1:].clone()

            return collate

        def train(model, data):
            for x, y in DataLoader(data, collate_fn=make_collate(Config(), 1)):
                F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        """
    )
    assert _loss(analysis).targets.padding.value == 4.0


def test_a_lookup_in_the_module_vocabulary_class_reads_its_getitem():
    source = """
        import torch

        SPECIALS = ["<unk>", "<pad>"]

        class Vocab:
            def __init__(self, words):
                self.itos = list(SPECIALS) + sorted(words)
                self.stoi = {w: i for i, w in enumerate(self.itos)}

            def __getitem__(self, word):
                return self.stoi.get(word, self.stoi["<unk>"])

        class Clips(torch.utils.data.Dataset):
            def __getitem__(self, i):
                return self.items[i]

        built = Vocab(["a"])
        built_pad = built["<pad>"]

        def handed_in(vocab):
            pad = vocab["<pad>"]
            return pad

        def factory(vocab):
            def inner(batch):
                free = vocab["<pad>"]
                return free
            return inner
        """
    analysis, _ = analyse(source)
    for fn, name in (("<module>", "built_pad"), ("handed_in", "pad"), ("inner", "free")):
        value = env(analysis, fn, name)
        # The dataset's __getitem__ indexes samples: not taken for a second vocabulary.
        assert value.int_value == 1 and value.token_id, (fn, name)
    # A second class that looks keys up: a vocabulary handed in may be either one.
    analysis, _ = analyse(source + "\n        class Tags:\n            def __getitem__(self, t):\n                return 0\n")
    assert env(analysis, "handed_in", "pad").int_value is None
    assert env(analysis, "handed_in", "pad").token_id
    assert env(analysis, "<module>", "built_pad").int_value == 1  # an instance is its class


def test_softmax_weights_multiplied_into_activations_and_summed_weigh_values():
    analysis, _ = analyse(
        """
        import torch

        def pool(self, h):
            w = torch.softmax(self.score(h), dim=1)
            return (h * w).sum(1)

        def gate(self, h):
            w = torch.softmax(self.score(h), dim=1)
            return h * w

        def product(self, x):
            w = torch.softmax(self.score(x), dim=-1)
            return torch.sum(torch.tanh(x) * w, dim=-1)
        """
    )
    weighs = {f.name: [s.weighs_values for s in f.softmax_sites] for f in analysis.functions}
    assert weighs["pool"] == [True]
    assert weighs["gate"] == [False]  # `h` may be a number and nothing sums the product
    assert weighs["product"] == [True]  # a tensor of activations times the weights


def test_progress_bars_and_next_of_iter_yield_the_loader_batches():
    analysis, _ = analyse(
        """
        import torch.nn.functional as F
        from torch.nn.utils.rnn import pad_sequence
        from tqdm import tqdm

        def f(net, rows, params):
            batches = [pad_sequence(rows, batch_first=True)]
            for targets in tqdm(batches):
                F.cross_entropy(net(targets), targets)
            first = next(iter(batches))
            weight = next(params)
            return first
        """
    )
    sites = analysis.sites("loss_sites")
    assert [s.targets.padding.value for s in sites] == [0.0]
    assert env(analysis, "f", "first").padding.value == 0.0
    assert not env(analysis, "f", "weight").padded


def test_a_field_stored_into_an_encoding_and_popped_off_it():
    analysis, _ = analyse(
        """
        def collate(tokenizer, rows, other):
            enc = tokenizer(rows, padding=True, return_tensors="pt")
            dec = tokenizer(rows, padding=True, return_tensors="pt")
            enc["labels"] = dec["input_ids"]
            labels = enc.pop("labels")
            gone = enc.get("labels")
            plain = {}
            plain["x"] = other
            return labels
        """
    )
    assert env(analysis, "collate", "labels").padding.token_id
    assert not env(analysis, "collate", "enc").entries  # popped
    assert not env(analysis, "collate", "gone").padded


def test_a_partial_of_a_collate_function_pads_as_the_function_does_with_its_bound_arguments():
    analysis, _ = analyse(
        """
        from functools import partial
        import torch.nn as nn
        from torch.nn.utils.rnn import pad_sequence
        from torch.utils.data import DataLoader

        def collate(batch, pad_id, label_pad):
            ids = pad_sequence([b["ids"] for b in batch], batch_first=True, padding_value=pad_id)
            labels = pad_sequence([b["labels"] for b in batch], batch_first=True, padding_value=label_pad)
            return {"ids": ids, "labels": labels}

        def train(ds, model, pad_id):
            loader = DataLoader(ds, collate_fn=partial(collate, label_pad=-100, pad_id=pad_id))
            bound = partial(collate, pad_id=pad_id)
            batch = bound(ds[:4], label_pad=0)
            loss_fn = nn.CrossEntropyLoss(ignore_index=pad_id)
            for step, b in enumerate(loader):
                loss = loss_fn(model(b["ids"]), b["labels"])
        """
    )
    site = _loss(analysis)
    assert site.targets.padding.value == -100  # bound by keyword, after the loader's batch
    assert site.ignore_index is None and site.ignores_token_id  # `pad_id`: a token id, number unknown
    # Called directly, the partial's arguments join the call's own.
    from attnlint.analysis.losses import dict_entry

    assert dict_entry(env(analysis, "train", "batch"), "labels").padding.value == 0


def test_an_ignore_index_read_from_a_number_is_no_token_id():
    analysis, _ = analyse(
        """
        import torch.nn.functional as F

        def step(logits, labels, ignore=-100):
            return F.cross_entropy(logits, labels, ignore_index=ignore)
        """
    )
    assert not _loss(analysis).ignores_token_id


def test_a_collator_instance_built_at_the_top_level_pads_with_the_ids_its_constructor_gets():
    # The top level is a caller like any other: once `Collator(...)`'s attributes are known, the
    # loader it builds (and the function the loader is handed to) sees them.
    analysis, _ = analyse(
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

        def train_one_epoch(model, loader, criterion):
            for ids, labels in loader:
                criterion(model(ids).flatten(0, 1), labels.flatten())

        if __name__ == "__main__":
            tag2idx = build_vocab([["B-PER", "O"]], ["<pad>"])
            loader = DataLoader([], collate_fn=Collator(0, tag2idx["<pad>"]))
            train_one_epoch(nn.Linear(4, 5), loader, nn.CrossEntropyLoss())
        """
    )
    site = _loss(analysis)
    assert site.targets.padding.value == 0
    assert site.ignore_index == -100


def test_a_collate_function_handed_back_by_a_factory_is_called_by_the_loader():
    # `make_collate_fn(tok)` returns a partial, or a closure: the loader's batches are what it
    # makes. A validation loader that is None unless asked for is still a loader where iterated.
    analysis, _ = analyse(
        """
        from functools import partial
        import torch
        import torch.nn as nn
        from torch.nn.utils.rnn import pad_sequence
        from torch.utils.data import DataLoader

        def _collate(batch, tgt_pad_id):
            return pad_sequence(batch, batch_first=True, padding_value=tgt_pad_id)

        def make_partial(pad):
            return partial(_collate, tgt_pad_id=pad)

        def make_closure(pad):
            def collate(batch):
                return torch.full((len(batch), 8), pad, dtype=torch.long)
            return collate

        def run_epoch(model, loader, criterion):
            for tgt in loader:
                criterion(model(tgt[:, :-1]).flatten(0, 1), tgt[:, 1:].flatten())

        def main(valid):
            collate = make_partial(5)
            train_loader = DataLoader([], collate_fn=collate)
            valid_loader = None
            if valid:
                valid_loader = DataLoader(valid, collate_fn=collate)
            criterion = nn.CrossEntropyLoss()
            run_epoch(None, train_loader, criterion)
            if valid_loader is not None:
                run_epoch(None, valid_loader, criterion)

        def batches():
            collate = make_closure(6)
            return DataLoader([], collate_fn=collate)
        """
    )
    assert _loss(analysis).targets.padding.value == 5
    assert env(analysis, "main", "valid_loader").each.padding.value == 5
    assert env(analysis, "batches", "collate").closure is not None
    # What the loader the closure is handed to yields.
    (batches,) = [f for f in analysis.functions if f.name == "batches"]
    assert batches.returns[0].each.padding.value == 6


def test_a_partial_handed_back_by_a_function_of_another_file_is_called_there(tmp_path):
    from pathlib import Path

    import libcst as cst

    from attnlint.analysis import analyze_module
    from attnlint.analysis.project import Project

    package = tmp_path / "proj"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "data.py").write_text(
        "from functools import partial\n"
        "from torch.nn.utils.rnn import pad_sequence\n"
        "def _collate(batch, tgt_pad_id):\n"
        "    return pad_sequence(batch, batch_first=True, padding_value=tgt_pad_id)\n"
        "def make_collate_fn(pad):\n"
        "    return partial(_collate, tgt_pad_id=pad)\n"
    )
    train = package / "train.py"
    train.write_text(
        "import torch.nn as nn\n"
        "from torch.utils.data import DataLoader\n"
        "from .data import make_collate_fn\n"
        "def run_epoch(model, loader, criterion):\n"
        "    for tgt in loader:\n"
        "        criterion(model(tgt).flatten(0, 1), tgt.flatten())\n"
        "def main(ds):\n"
        "    loader = DataLoader(ds, collate_fn=make_collate_fn(4))\n"
        "    run_epoch(None, loader, nn.CrossEntropyLoss())\n"
    )
    analysis = analyze_module(cst.parse_module(train.read_text()), project=Project([tmp_path]), path=Path(train))
    assert _loss(analysis).targets.padding.value == 4
