"""Losses and padding: cross-entropy calls and the targets they get, padded batches
(`pad_sequence`, and the value their padding holds), and rewrites of that value
(`targets[targets == pad] = -100`, `masked_fill(..., -100)`)."""

from __future__ import annotations

from typing import Dict, Optional

import libcst as cst

from attnlint.analysis import handlers, masks
from attnlint.analysis.handlers import Call
from attnlint.analysis.names import literal, qualify, words
from attnlint.analysis.values import LossSite, Padding, TokenIds, Value, join


def _flow():
    from attnlint.analysis import flow

    return flow


def repadded(value: Value, pad: Optional[float]) -> Value:
    """A padded tensor whose padding positions now hold `pad` (None: a value we cannot read)."""
    return value.with_(padding=Padding(value=None if pad is None else float(pad), node=None))


@handlers.function_named("pad_sequence")
def pad_sequence(ev, call: Call):
    flow = _flow()
    node = call.node
    ev.args(node)
    pad_arg = flow._arg(node, 2, "padding_value")
    if pad_arg is None:
        return Value(kind="tensor", node=node, padding=Padding(value=0.0))
    return Value(kind="tensor", node=node, padding=padding_of(ev, pad_arg.value))


def padding_of(ev, node: cst.BaseExpression, value: Optional[Value] = None) -> Padding:
    """The padding an expression written as a pad value gives: its number when the analysis
    knows it, else whether it is a token id (`vocab["<pad>"]`, `tokenizer.pad_token_id`)."""
    number = masks.number(node)
    if number is not None:
        return Padding(value=number, node=node)
    if value is None:
        value = ev.eval(node)
    if value.int_value is not None:
        return Padding(value=float(value.int_value), node=node)
    if value.sym is not None and value.sym.is_const:
        return Padding(value=float(value.sym.coeff), node=node)
    return Padding(value=None, node=node, token_id=value.token_id or names_token_id(ev, node, value))


# ------------------------------------------------------------------------------------------
# Token ids: where pad ids come from (vocabularies, tokenizers, names)
# ------------------------------------------------------------------------------------------
_ID_WORDS = ("id", "idx", "index", "ids")
# `label_pad_token_id` is HF's -100 for labels; an `ignore_*` value is not a vocabulary id.
_NOT_TOKEN_ID_WORDS = ("label", "labels", "ignore", "ignored")


def names_pad_id(name: Optional[str]) -> bool:
    """`pad_id`, `PAD_IDX`, `pad_token_id`, `padding_idx`: a name that says "the pad token's id"."""
    if not isinstance(name, str):
        return False
    parts = words(name)
    return (
        any(w in ("pad", "padding") for w in parts)
        and any(w in _ID_WORDS for w in parts)
        and not any(w in _NOT_TOKEN_ID_WORDS for w in parts)
    )


def names_token_id(ev, node: cst.BaseExpression, value: Optional[Value] = None) -> bool:
    """An expression naming the pad token's id, whose number the analysis cannot read: an
    attribute (`tokenizer.pad_token_id`, `self.pad_idx`, `config.pad_token_id`) or a global. A
    parameter counts only without a default (a default is what callers get; it may be -100),
    and so does an attribute set from one (`self.pad_id = pad_id` of `pad_id=-100`)."""
    if value is not None and value.kind == "scalar" and not value.token_id:
        return False  # a number computed or defaulted where we can see it, not a name alone
    if isinstance(node, cst.Attribute):
        return names_pad_id(node.attr.value)
    if isinstance(node, cst.Name) and names_pad_id(node.value):
        param = ev.facts.param_nodes.get(node.value)
        return param is None or param.default is None
    return False


def pad_token_text(text: Optional[str]) -> bool:
    """A pad token's string: `<pad>`, `[PAD]`, `<|pad|>`, `PAD`."""
    if not isinstance(text, str) or len(text) > 24:
        return False
    return text.strip("<>[]|_ ").lower() in ("pad", "padding")


def string_text(node: cst.BaseExpression) -> Optional[str]:
    if isinstance(node, cst.SimpleString):
        value = literal(node)
        return value if isinstance(value, str) else None
    return None


def vocabulary_of(value: Value) -> Optional[TokenIds]:
    """A vocabulary's ids: a dict's, or a list's (its string elements at their positions)."""
    if value.vocabulary is not None:
        return value.vocabulary
    if value.kind == "tuple" and value.elements and value.each is None:
        ids = tuple((e.text, i) for i, e in enumerate(value.elements) if e.text is not None)
        return TokenIds(ids) if ids else None
    return None


def token_id_value(vocabulary: Optional[TokenIds], key: Value, node) -> Optional[Value]:
    """`stoi["<pad>"]`: the id when the vocabulary shows it; a token id of unknown number when
    only the key says it is the pad token (a vocabulary we cannot read)."""
    text = key.text
    if vocabulary is not None and text is not None:
        known = vocabulary.id_of(text)
        if known is not None:
            return Value(kind="scalar", int_value=known, node=node, token_id=True)
    if pad_token_text(text) or names_pad_id(text):
        return Value(kind="scalar", node=node, token_id=True)
    return None


def token_lookup(ev, node: cst.Subscript, base: Value) -> Optional[Value]:
    """`vocab["<pad>"]`, `vocab.stoi[PAD]`, `char_to_idx[PAD_TOKEN]`, `config["pad_token_id"]`."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    key_node = node.slice[0].slice.value
    # Only keys whose evaluation has no effects (the subscript's own evaluation reads them again).
    simple = isinstance(key_node, cst.Name) or (
        isinstance(key_node, cst.Attribute) and _flow().is_simple(key_node) and key_node.attr.value not in ("T", "mT")
    )
    if not (simple or isinstance(key_node, cst.SimpleString)):
        return None
    key = ev.eval(key_node)
    if key.text is None:
        # `vocab[w]` for a word the code does not show: some id of the vocabulary, a number.
        return Value(kind="scalar", node=node) if vocabulary_of(base) is not None else None
    entry = dict_entry(base, key.text)
    if entry is not None:
        return entry
    field = encoding_field(base, key.text, node)
    if field is not None:
        return field
    vocabulary = vocabulary_of(base)
    if vocabulary is None:
        looked_up = class_vocabulary_lookup(ev, base, node.value, key, node)
        if looked_up is not None:
            return looked_up
    return token_id_value(vocabulary, key, node)


def class_vocabulary_lookup(ev, base: Value, base_node, key: Value, node) -> Optional[Value]:
    """`vocab["<pad>"]` on a vocabulary class of the module: the id its `__getitem__` returns
    for the key (`return self.stoi.get(tok, unk)` over `{t: i for i, t in enumerate(itos)}`).
    An instance built here is its class; a name handed in whose value the analysis cannot see
    (a parameter, a closure's free name) is the module's one class whose `__getitem__` maps
    this key to an id, the way a method name defined by one class names it
    (Summaries.unique_method). Datasets define `__getitem__` too: they index samples, not
    tokens, and are never taken for a vocabulary."""
    summaries = ev.project
    if summaries is None or key.text is None:
        return None
    definitions = summaries.definitions
    if base.kind == "module" and base.user_class:
        owners = [base.module_type]
    elif (
        isinstance(base_node, cst.Name)
        and not base.entries
        and base.rank is None
        and (
            # A parameter as it came in (parameters start as tensors of unknown rank; a string
            # key says it is none), or a name this scope never bound (a closure's free name).
            (base.kind in ("unknown", "tensor") and base.param == base_node.value)
            or (base.kind == "unknown" and base_node.value not in ev.env)
        )
    ):
        owners = [
            name
            for name in definitions.classes
            if (name, "__getitem__") in definitions.methods and "Dataset" not in definitions.bases.get(name, ())
        ]
        if len(owners) != 1:
            return None
    else:
        return None
    target = definitions.method(owners[0], "__getitem__")
    if target is None:
        return None
    fake = cst.Call(func=cst.Attribute(value=cst.Name("_"), attr=cst.Name("__getitem__")), args=[cst.Arg(value=cst.Name("_"))])
    result = summaries.call(ev, fake, "__getitem__", [Value(kind="scalar", text=key.text)], True, target=target)
    if result is None or result.int_value is None or result.kind != "scalar":
        return None
    return Value(kind="scalar", int_value=result.int_value, node=node, token_id=True)


@handlers.method("index", "convert_tokens_to_ids", "token_to_id", "piece_to_id")
def _token_index(ev, call: Call):
    """`specials.index("<pad>")`, `tokenizer.convert_tokens_to_ids("[PAD]")`."""
    values = ev.args(call.node)
    if len(values) != 1 or call.node.args[0].keyword is not None:
        return None
    ids = vocabulary_of(call.receiver) if call.name == "index" else None
    return token_id_value(ids, values[0], call.node)


# ------------------------------------------------------------------------------------------
# Command-line options: `parser.add_argument("--pad-id", type=int, default=0)`
# ------------------------------------------------------------------------------------------
PARSED_ARGUMENTS = "argparse.Namespace"
# The options of the module analysed last (modules are analysed one at a time; one entry keeps
# no module alive after its run).
_last_options: tuple = (None, {})


@handlers.method("parse_args")
def _parse_args(ev, call: Call):
    """`args = parser.parse_args()`: an object whose attributes are the parser's options."""
    ev.args(call.node)
    return Value(kind="module", module_type=PARSED_ARGUMENTS, node=call.node)


def option_value(ev, attr: str, node) -> Optional[Value]:
    """`args.pad_id` of `add_argument("--pad_id", default=0)`: the command line may give another
    number, so only what holds for every number a pad id can be is kept: it is a token id."""
    summaries = ev.project
    if summaries is None:
        return None
    global _last_options
    module = summaries.analysis.module
    cached_module, options = _last_options  # one tuple: read together even across threads
    if cached_module is not module:
        options = _defaults_of_options(module)
        _last_options = (module, options)
    default = options.get(attr)
    if default is None:
        return None
    # An option defaulting to -100 is no token id, whatever its name says; one that says padding
    # (`--label_pad`, `--pad`) and defaults to a number >= 0 pads with a class index by default.
    says_pad = names_pad_id(attr) or any(w in ("pad", "padding") for w in words(attr))
    return Value(kind="scalar", node=node, token_id=default >= 0 and says_pad)


def _defaults_of_options(module: cst.Module) -> Dict[str, int]:
    """Option name (as `args.<name>` reads it) -> its integer default, for every `add_argument`."""
    from attnlint.analysis.flow import int_literal, walk_nodes

    found: Dict[str, int] = {}
    for node in walk_nodes(module):
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
            continue
        if node.func.attr.value != "add_argument" or not node.args:
            continue
        default = _flow()._arg(node, 99, "default")
        dest = _flow()._arg(node, 99, "dest")
        number = int_literal(default.value) if default is not None else None
        names = [string_text(a.value) for a in node.args if a.keyword is None]
        if dest is not None:
            names = [string_text(dest.value)]
        longs = [n for n in names if n and n.startswith("--")] or [n for n in names if n and not n.startswith("-")]
        if number is None or not longs:
            continue
        name = longs[0].lstrip("-").replace("-", "_")
        found[name] = number if name not in found or found[name] == number else -1
    return found


# ------------------------------------------------------------------------------------------
# Tokenizers that pad: `tokenizer(texts, padding=True, return_tensors="pt")`, `tokenizer.pad(...)`
# ------------------------------------------------------------------------------------------
_TOKENIZER_WORDS = ("tokenizer", "tokeniser", "tok")
# The fields of an encoding that hold token ids (padded with the pad token id); not the masks.
_ID_FIELDS = ("input_ids",)


def _names_tokenizer(node) -> bool:
    name = node.attr.value if isinstance(node, cst.Attribute) else getattr(node, "value", None)
    return isinstance(name, str) and any(w in _TOKENIZER_WORDS for w in words(name))


def _pads(call: cst.Call, method: Optional[str]) -> bool:
    """Does this tokenizer call pad? `.pad(...)` does; a call or `batch_encode_plus` only with
    `padding=True`/`"longest"`/`"max_length"` (or the old `pad_to_max_length=True`)."""
    flow = _flow()
    if method == "pad":
        return True
    for keyword in ("padding", "pad_to_max_length"):
        arg = flow._arg(call, 99, keyword)
        if arg is None:
            continue
        literal = arg.value
        if isinstance(literal, cst.Name):
            return literal.value == "True"
        text = string_text(literal)
        return text in ("longest", "max_length")
    return False


def tokenizer_call(ev, node: cst.Call) -> Optional[Value]:
    """`enc = tokenizer(texts, padding=True, return_tensors="pt")`: an encoding whose
    `input_ids` are padded with the tokenizer's pad token id (a token id, so never -100)."""
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value in ("pad", "batch_encode_plus", "__call__"):
        owner, method = func.value, func.attr.value
    elif isinstance(func, (cst.Name, cst.Attribute)):
        owner, method = func, None
    else:
        return None
    if not _names_tokenizer(owner) or not _pads(node, method):
        return None
    callee = ev.eval(func if method is None else owner)
    if callee.kind == "module" and callee.user_class:
        return None  # a tokenizer class of the checked code: its own code says how it pads
    ev.args(node)
    pad_id = cst.Attribute(value=owner, attr=cst.Name("pad_token_id"))
    return Value(kind="unknown", node=node, padding=Padding(value=None, node=pad_id, token_id=True))


def is_encoding(value: Value) -> bool:
    """A padding tokenizer's encoding (`tokenizer(texts, padding=True)`)."""
    return value.kind == "unknown" and value.padded and isinstance(value.node, cst.Call)


def encoding_field(receiver: Value, field: Optional[str], node) -> Optional[Value]:
    """`enc["input_ids"]`, `enc.input_ids` of a padding tokenizer's encoding."""
    if receiver.kind != "unknown" or not receiver.padded or field not in _ID_FIELDS:
        return None
    return Value(kind="tensor", node=node, padding=receiver.padding)


def dict_literal(ev, node: cst.Dict) -> Value:
    """`{"<pad>": 0, "<unk>": 1}`: a vocabulary when its keys are strings and its ids numbers."""
    ids = []
    entries = []
    for element in node.elements:
        if not isinstance(element, cst.DictElement):
            return Value(kind="unknown", node=node)
        text = string_text(element.key)
        if text is None:
            continue  # keys we cannot read: their values are not followed
        value = ev.eval(element.value)
        entries.append((text, value))
        # Ids written as numbers or constants.
        literal = isinstance(element.value, (cst.Integer, cst.UnaryOperation, cst.Name))
        if literal and value.int_value is not None:
            ids.append((text, value.int_value))
    return Value(
        kind="unknown", node=node, vocabulary=TokenIds(tuple(ids)) if ids else None, entries=tuple(entries)
    )


def dict_entry(base: Value, key: Optional[str]) -> Optional[Value]:
    """`batch["labels"]` of a dict whose entries the code shows."""
    if not base.entries or key is None:
        return None
    return base.entry(key)


def items_comprehension(ev, node: cst.DictComp) -> Optional[Value]:
    """`{k: v.to(device) for k, v in batch.items()}`: the value expression for each entry."""
    generators = node.for_in
    iterated = generators.iter
    target = generators.target
    if not (
        isinstance(iterated, cst.Call)
        and isinstance(iterated.func, cst.Attribute)
        and iterated.func.attr.value == "items"
        and not iterated.args
        and isinstance(target, cst.Tuple)
        and len(target.elements) == 2
        and all(isinstance(e.value, cst.Name) for e in target.elements)
        and isinstance(node.key, cst.Name)
        and node.key.value == target.elements[0].value.value
    ):
        return None
    source = ev.eval(iterated.func.value)
    if not source.entries:
        return None
    key_name, value_name = (e.value.value for e in target.elements)
    saved = dict(ev.env)
    entries = []
    for key, value in source.entries:
        ev.env = dict(saved)
        ev.env[key_name] = Value(kind="scalar", text=key)
        ev.env[value_name] = value
        if generators.ifs:
            entries = None  # a filter we do not evaluate: which entries stay is unknown
            break
        entries.append((key, ev.eval(node.value)))
    ev.env = saved
    if entries is None:
        return None
    return Value(kind="unknown", node=node, entries=tuple(entries))


def dict_comprehension(ev, node: cst.DictComp) -> Value:
    """`{t: i for i, t in enumerate(itos)}`: token -> position of the list enumerated."""
    batch = items_comprehension(ev, node)
    if batch is not None:
        return batch
    generators = node.for_in
    if generators.inner_for_in is not None or generators.ifs:
        return Value(kind="unknown", node=node)
    iterated = generators.iter
    target = generators.target
    if not (
        isinstance(iterated, cst.Call)
        and isinstance(iterated.func, cst.Name)
        and iterated.func.value == "enumerate"
        and len(iterated.args) in (1, 2)
        and isinstance(target, cst.Tuple)
        and len(target.elements) == 2
        and all(isinstance(e.value, cst.Name) for e in target.elements)
        and isinstance(node.key, cst.Name)
        and isinstance(node.value, cst.Name)
    ):
        return Value(kind="unknown", node=node)
    index_name, token_name = (e.value.value for e in target.elements)
    if (node.key.value, node.value.value) != (token_name, index_name):
        return Value(kind="unknown", node=node)  # `{i: t ...}` maps ids to tokens
    start = 0
    if len(iterated.args) == 2:
        start = ev.eval(iterated.args[1].value).int_value
        if start is None:
            return Value(kind="unknown", node=node)
    listed = vocabulary_of(ev.eval(iterated.args[0].value))
    if listed is None:
        # Positions of tokens the code does not show (`enumerate(sorted(text.split()))`): still a
        # vocabulary, token -> id, whose lookups are numbers.
        listed = TokenIds(())
    return Value(kind="unknown", node=node, vocabulary=TokenIds(tuple((t, i + start) for t, i in listed.ids)))


@handlers.function_named("cross_entropy")
def cross_entropy(ev, call: Call):
    node = call.node
    if len(node.args) < 2:
        return None
    values = ev.args(node)
    loss_site(ev, node, values[1], node.args[1].value, node)
    return Value(kind="tensor", rank=0, node=node)


@handlers.module("CrossEntropyLoss")
def cross_entropy_module(ev, call: Call):
    values = ev.args(call.node)
    if len(values) < 2:
        return Value(kind="unknown", node=call.node)
    loss_site(ev, call.node, values[1], call.args[1].value, call.receiver.ctor, built_with=call.receiver.ignore_index)
    return Value(kind="tensor", rank=0, node=call.node)


def loss_site(
    ev, call: cst.Call, targets: Value, targets_node, configured_at: Optional[cst.Call], built_with: Optional[int] = None
) -> None:
    """`built_with`: the ignore_index a loss module was built with, read where it was built."""
    flow = _flow()
    # nn.CrossEntropyLoss(weight, size_average, ignore_index, ...) and
    # F.cross_entropy(input, target, weight, size_average, ignore_index, ...).
    where = configured_at if configured_at is not None else call
    functional = configured_at is None or configured_at is call
    ignore_position, weight_position = (4, 2) if functional else (2, 0)
    ignore_arg = flow._arg(where, ignore_position, "ignore_index")
    read = None
    weight_arg = flow._arg(where, weight_position, "weight")
    weighted = weight_arg is not None and not flow.is_false(weight_arg.value)
    if any(a.star == "**" for a in where.args):
        ignore = None  # `**kwargs` may set it
    elif ignore_arg is None:
        ignore = -100  # PyTorch's default
    else:
        number = masks.number(ignore_arg.value)
        if number is not None:
            ignore = int(number)
        elif not functional and built_with is not None:
            ignore = built_with  # read in the scope that built the module
        else:
            read = ev.eval(ignore_arg.value)
            ignore = read.int_value
    ignores_token_id = ignore is None and ignore_arg is not None and names_token_id(ev, ignore_arg.value, read)
    reduction_arg = flow._arg(where, 99, "reduction")
    reduction: Optional[str] = "mean"
    if reduction_arg is not None:
        literal = reduction_arg.value
        reduction = literal.evaluated_value if isinstance(literal, cst.SimpleString) else None
    ev.facts.loss_sites.append(
        LossSite(
            call=call,
            targets=targets,
            targets_node=targets_node,
            ignore_index=ignore,
            ignore_index_node=ignore_arg.value if ignore_arg is not None else None,
            configured_at=configured_at,
            reduction=reduction,
            weighted=weighted,
            ignores_token_id=ignores_token_id,
        )
    )


# ------------------------------------------------------------------------------------------
# Padding built by hand: list padding, torch.full, data loaders
# ------------------------------------------------------------------------------------------
def _number_of(value: Value) -> Optional[float]:
    if value.int_value is not None:
        return float(value.int_value)
    if value.sym is not None and value.sym.is_const:
        return float(value.sym.coeff)
    return None


def repeated_list(ev, items: Value, node) -> Value:
    """`[pad] * (n - len(ids))`: a run of padding."""
    if items.kind == "tuple" and len(items.elements) == 1:
        element = items.elements[0]
        number = _number_of(element)
        if number is not None or element.node is not None:
            token_id = number is None and element.node is not None and (
                element.token_id or names_token_id(ev, element.node, element)
            )
            return Value(kind="tuple", node=node, padding=Padding(value=number, node=element.node, token_id=token_id))
    return Value(kind="tuple", node=node)


def concatenated_lists(left: Value, right: Value, node) -> Value:
    """`ids + [pad] * (n - len(ids))`: a sequence padded at its end (or start)."""
    padding = right.padding if right.kind == "tuple" and right.padded else None
    if padding is None and left.kind == "tuple" and left.padded:
        padding = left.padding
    # `["<pad>", "<unk>"] + sorted(words)`: the specials keep their positions.
    ids = vocabulary_of(left) if left.kind == "tuple" else None
    right_ids = vocabulary_of(right) if right.kind == "tuple" else None
    if ids is not None and right_ids is not None and left.elements and left.each is None:
        ids = TokenIds(ids.ids + tuple((t, i + len(left.elements)) for t, i in right_ids.ids))
    # `x.size()[:-1] + (heads, head_size)`: whatever comes first, these end the sequence.
    if right.kind == "tuple" and right.elements and right.each is None:
        tail = right.elements
    else:
        tail = right.known_tail if right.kind == "tuple" else ()
    return Value(kind="tuple", node=node, padding=padding, vocabulary=ids, known_tail=tail)


def padded_rows(value: Value) -> Optional[Padding]:
    """The padding of a list of padded rows (`[pad_row(s) for s in seqs]`, appended rows)."""
    if value.kind != "tuple":
        return value.padding
    if value.padded:
        return value.padding
    rows = list(value.elements) or ([value.each] if value.each is not None else [])
    paddings = {r.padding for r in rows}
    if rows and len(paddings) == 1 and None not in paddings:
        return paddings.pop()
    return None


@handlers.method("append")
def _append(ev, call: Call):
    """`rows.append(ids + [pad] * k)`: the list holds padded rows."""
    flow = _flow()
    receiver = call.receiver
    values = ev.args(call.node)
    if receiver.kind != "tuple" or not values:
        return None
    row = values[0]
    owner = flow.owner_name(call.receiver_node)
    if owner is not None and owner in ev.env:
        if row.padded or row.kind == "tuple" and padded_rows(row) is not None:
            padding = row.padding if row.padded else padded_rows(row)
            current = receiver.padding if receiver.padded else None
            if current is None and not receiver.elements and receiver.each is None:
                ev.env[owner] = receiver.with_(padding=padding)
            elif current != padding:
                ev.env[owner] = receiver.with_(padding=None)
        elif receiver.padded:
            ev.env[owner] = receiver.with_(padding=None)
        if row.kind in ("tensor", "module") and not receiver.elements:
            # `weights = []`, then `weights.append(w.view(b, c, 1, 1))` in a loop: the list holds
            # such tensors (`torch.stack(weights, 0)` stacks them); appended ones that differ
            # keep what they agree on.
            current = ev.env[owner]
            each = row if current.each is None else join(current.each, row)
            ev.env[owner] = current.with_(each=each)
    return Value(kind="scalar", node=call.node)


@handlers.function("torch.full")
def _full(ev, call: Call):
    """`torch.full((b, n), pad_id)`: every position holds the pad value until overwritten."""
    from attnlint.analysis import shapes

    result = shapes._constructor(ev, call)
    fill = _flow()._arg(call.node, 1, "fill_value")
    if fill is None:
        return result
    if result.constructor is not None:
        from dataclasses import replace

        result = result.with_(constructor=replace(result.constructor, fill_value=fill.value))
    padding = padding_of(ev, fill.value)
    if (
        padding.token_id
        or masks._names_pad(fill.value)
        or (isinstance(fill.value, cst.Name) and fill.value.value in ev.constants)
        or _looks_up_pad_token(ev, fill.value)
    ):
        return result.with_(padding=padding)
    return result


def _looks_up_pad_token(ev, node: cst.BaseExpression) -> bool:
    """`LABEL2ID["<pad>"]`, `vocab[PAD_TOKEN]`: the id a vocabulary gives the pad token."""
    if not isinstance(node, cst.Subscript) or len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return False
    key = node.slice[0].slice.value
    if not isinstance(key, (cst.SimpleString, cst.Name)):
        return False
    text = ev.eval(key).text
    return pad_token_text(text) or names_pad_id(text)


@handlers.function("torch.nn.functional.pad", "torch.pad")  # names.canonical drops `nn.functional`
def _functional_pad(ev, call: Call):
    """`F.pad(ids, (0, n - len(ids)), value=pad_id)`: padded with a pad id. Zero padding (the
    default) is how images, windows and blocks are padded too: not a padded batch by itself."""
    values = ev.args(call.node)
    value_arg = _flow()._arg(call.node, 3, "value")
    if not values or value_arg is None:
        return None
    source = values[0]
    if isinstance(value_arg.value, cst.Name) and value_arg.value.value in ("True", "False"):
        # `F.pad(frame_mask, (1, 0), value=True)` (a kept position for a class token): only a
        # bool tensor is padded with True or False, so this is a bool mask, whatever its source.
        from dataclasses import replace

        from attnlint.analysis.values import MaskFacts

        facts = source.mask or MaskFacts()
        origin = "bool_pad" if facts.origin in (None, "name") else facts.origin
        return source.with_(kind="tensor", node=call.node, mask=replace(facts, dtype="bool", origin=origin))
    padding = padding_of(ev, value_arg.value)
    if padding.token_id or masks._names_pad(value_arg.value):
        return Value(kind="tensor", rank=source.rank, node=call.node, padding=padding)
    if source.padded and not source.mask and source.kind == "tensor":
        # `F.pad(labels, (0, 1), value=eos_id)`: a column of another token appended to a padded
        # batch; the positions past each sequence's end still hold the batch's pad value.
        return Value(kind="tensor", rank=source.rank, node=call.node, padding=source.padding)
    return None


def _fills_rows(target: cst.Subscript) -> bool:
    """`ids[i, :len(seq)]`, `ids[i, -len(seq):]`: one row written up to (or from) a length the
    data decides, leaving the rest of the row as it was."""
    elements = [e.slice for e in target.slice]
    if len(elements) < 2 or not isinstance(elements[0], cst.Index) or not isinstance(elements[-1], cst.Slice):
        return False
    last = elements[-1]
    if last.step is not None or (last.lower is None) == (last.upper is None):
        return False
    bound = last.upper if last.upper is not None else last.lower
    return masks.number(bound) is None  # a fixed-width column block is not a row's own length


def filled_by_rows(stored: Value, target: cst.Subscript, written: Value) -> Optional[Padding]:
    """`ids = torch.zeros(b, n, dtype=torch.long); ids[i, :len(seq)] = seq`: rows filled up to a
    length the data decides (or from one, `[i, -len(seq):]`) leave the constructor's fill
    value in the rest of each row: padding."""
    ctor = stored.constructor
    if stored.padded or ctor is None or ctor.function not in ("torch.zeros", "torch.ones", "torch.full"):
        return None
    if ctor.dtype == "bool" or written.kind == "scalar" or written.mask is not None:
        return None  # `keep[i, :n] = 1`: a mask being built, not a batch of data
    if not _fills_rows(target):
        return None
    if ctor.function == "torch.full":
        # `torch.full((b, n), -100)` written as a number: the number is the padding.
        number = _flow().int_literal(ctor.fill_value) if ctor.fill_value is not None else None
        if number is None:
            return None  # `-1e9`, `0.0`: a bias or a float tensor, not ids
        return Padding(value=float(number), node=ctor.fill_value)
    return Padding(value=0.0 if ctor.function == "torch.zeros" else 1.0)


def stored_into(stored: Value, target: cst.Subscript, written: Value) -> Optional[Value]:
    """What a partial store `x[idx] = written` makes of x's padding (None: nothing changes).
    A padded tensor (`torch.full((b, n), pad)`) whose rows are then filled with data up to their
    lengths keeps its padding; any other store may rewrite the padding positions
    (`targets[targets == pad] = -100`): the padding then holds the number written, when it is
    one (else a value we cannot read)."""
    if stored.padded:
        if written.kind != "scalar" and written.mask is None and _fills_rows(target):
            return None
        if written.padding == stored.padding and written.kind != "scalar":
            # `enc[k] = pad_sequence(..., padding_value=tokenizer.pad_token_id)` on an encoding
            # padded with that id: the padding is what it was.
            return None
        number = masks.number(written.node) if written.node is not None else None
        return repadded(stored, number if number is not None else written.int_value)
    padding = filled_by_rows(stored, target, written)
    return stored.with_(padding=padding) if padding is not None else None


@handlers.function("torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader")
def _data_loader(ev, call: Call):
    """Iterating a DataLoader yields what its `collate_fn` returns."""
    from attnlint.analysis import modules

    values = ev.args(call.node)
    collate = _flow()._arg(call.node, 99, "collate_fn")
    if collate is None:
        # The default collate stacks what the dataset's `__getitem__` returns.
        dataset = _flow()._arg(call.node, 0, "dataset")
        position = list(call.node.args).index(dataset) if dataset is not None else None
        if position is None:
            return Value(kind="unknown", node=call.node)
        sample = _called_instance(ev, values[position], call.node, "__getitem__")
        batch = _default_collated(sample)
        if batch.kind == "unknown" and not batch.entries:
            return Value(kind="unknown", node=call.node)
        return Value(kind="tuple", each=batch, node=call.node)
    if isinstance(collate.value, cst.Lambda):
        batch = ev.apply_callable(collate.value, Value(kind="unknown"))
    elif _collate_factory_call(ev, collate.value) is not None:
        # `collate_fn=make_collate(vocab)`: the batches are what the closure it returns makes,
        # its free names bound as the factory binds them for this call.
        factory, inner = _collate_factory_call(ev, collate.value)
        batch = ev.project.call_closure(
            ev, collate.value, factory, inner, ev.args(collate.value), [Value(kind="unknown")]
        )
    elif _names_partial(ev, collate.value) and ev.eval(collate.value).bound_call is not None:
        # `collate_fn=partial(collate, pad_id=pad)`: the function with those arguments bound.
        fake = cst.Call(func=cst.Name("_"), args=[cst.Arg(value=cst.Name("_"))])
        batch = modules.bound_function_call(ev, fake, ev.eval(collate.value), [Value(kind="unknown")])
    elif isinstance(collate.value, cst.Call) or (
        isinstance(collate.value, cst.Name) and ev.env.get(collate.value.value, Value(kind="unknown")).user_class
    ):
        made = ev.eval(collate.value)
        if made.bound_call is not None or made.closure is not None:
            # `collate_fn=make_collate_fn(tok)` of another file: the partial or closure it returns.
            batch = modules.call_value(ev, made, [Value(kind="unknown")])
        else:
            batch = _called_instance(ev, made, call.node)
    else:
        batch = modules.call_with_values(ev, collate.value, [Value(kind="unknown")])
    if batch.kind == "unknown" and not batch.entries:
        return Value(kind="unknown", node=call.node)
    return Value(kind="tuple", each=batch, node=call.node)


def returned_closure(definition: cst.FunctionDef) -> Optional[cst.FunctionDef]:
    """`def make_collate(vocab): def collate(batch): ...; return collate`: the function a factory
    defines in its body and returns (every `return` of the factory returns it)."""
    from attnlint.analysis.flow import block_statements

    body = block_statements(definition.body)
    inner = {s.name.value: s for s in body if isinstance(s, cst.FunctionDef)}
    if not inner:
        return None
    returned = set()

    class _Returns(cst.CSTVisitor):
        def visit_FunctionDef(self, node) -> bool:
            return False  # the closure's own returns

        def visit_ClassDef(self, node) -> bool:
            return False

        def visit_Lambda(self, node) -> bool:
            return False

        def visit_Return(self, node) -> None:
            value = node.value
            returned.add(value.value if isinstance(value, cst.Name) else None)

    for stmt in body:
        if not isinstance(stmt, cst.FunctionDef):
            stmt.visit(_Returns())
    if len(returned) != 1:
        return None
    (name,) = returned
    return inner.get(name) if name is not None else None


def _names_partial(ev, node: cst.BaseExpression) -> bool:
    """A name (`collate`, maybe bound to a partial) or a `functools.partial(...)` call: reading
    either twice has no effect."""
    if isinstance(node, cst.Name):
        return True
    return isinstance(node, cst.Call) and qualify(node.func, ev.aliases) == "functools.partial"


def _collate_factory_call(ev, node: cst.BaseExpression):
    """`make_collate(vocab)` of a factory function of the module: (the factory, the closure it
    returns), or None."""
    if ev.project is None or not isinstance(node, cst.Call) or not isinstance(node.func, cst.Name):
        return None
    definition = ev.project.definitions.functions.get(node.func.value)
    if definition is None or node.func.value in ev.env:
        return None
    closure = returned_closure(definition)
    return (definition, closure) if closure is not None else None


@handlers.function("tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "tqdm.std.tqdm")
def _progress_bar(ev, call: Call):
    """`for batch in tqdm(loader, desc="train")`: a progress bar yields what it wraps."""
    values = ev.args(call.node)
    first = call.node.args[0] if call.node.args else None
    if first is None or first.keyword is not None or first.star:
        return None
    return values[0]


def _called_instance(ev, instance: Value, node: cst.Call, method: str = "__call__") -> Value:
    """`DataLoader(ds, collate_fn=Collator(cfg))`: a batch is what the class's `__call__`
    returns for the list of samples (`__getitem__`: one sample of a dataset of the checked code)."""
    if instance.kind != "module" or not instance.user_class or ev.project is None:
        return Value(kind="unknown")
    fake = cst.Call(func=cst.Attribute(value=cst.Name("_"), attr=cst.Name(method)), args=[cst.Arg(value=cst.Name("_"))])
    if instance.module_type in ev.project.external_classes:
        # A class of another file of the project (`from .data.collate import Collator`).
        result = ev.project.call(ev, fake, method, [Value(kind="unknown")], True, class_name=instance.module_type)
        return result if result is not None else Value(kind="unknown")
    target = ev.project.definitions.method(instance.module_type, method)
    if target is None:
        return Value(kind="unknown")
    result = ev.project.call(ev, fake, method, [Value(kind="unknown")], True, target=target)
    return result if result is not None else Value(kind="unknown")


def _default_collated(sample: Value) -> Value:
    """What torch's default collate makes of samples like this one: tensors stacked (each keeps
    its data facts, padding included), tuples and dicts of tensors item by item. Python lists
    of numbers are transposed by it: not followed."""
    if sample.kind == "tensor":
        return Value(kind="tensor", **sample.data_facts())
    if sample.entries:
        return Value(kind="unknown", entries=tuple((k, _default_collated(v)) for k, v in sample.entries))
    if sample.kind == "tuple" and sample.elements and sample.each is None:
        items = tuple(_default_collated(e) for e in sample.elements)
        if all(i.kind == "tensor" or i.entries for i in items):
            return Value(kind="tuple", elements=items)
    return Value(kind="unknown")


# ------------------------------------------------------------------------------------------
# A data loader handed in from outside: the batches of the module's own collate function
# ------------------------------------------------------------------------------------------
_LOADER_WORDS = ("loader", "dataloader")
_COLLATE_WORDS = ("collate", "collator")


def names_loader(name: str) -> bool:
    """`loader`, `train_loader`, `val_dataloader`: a parameter that says it is a data loader."""
    return any(w in _LOADER_WORDS for w in words(name))


def names_batch(name: str) -> bool:
    """`batch`, `train_batch`: a parameter that says it is one batch (not `batch_size`)."""
    parts = words(name)
    return bool(parts) and parts[-1] == "batch"


def module_collate_batch(ev) -> Optional[Value]:
    """What a batch of a data loader built elsewhere holds, when the module shows it: the module
    defines exactly one collate function (`def collate(features, pad_id)`, `def sft_collate(...)`,
    a dataset's `def collate(self, batch)`), and that function returns a padded batch. A loader
    (or one batch of it) handed to a function of such a module (`def evaluate(model, loader)`)
    is then most likely made by it, the way a method name defined by one class of the module
    names that class (Summaries.unique_method). Parameters it has no default for are unknown;
    the others keep their defaults."""
    summaries = ev.project
    if summaries is None:
        return None
    definitions = summaries.definitions

    def collates(name: str) -> bool:
        return any(w in _COLLATE_WORDS for w in words(name))

    candidates = [(None, name, node) for name, node in definitions.functions.items() if collates(name)]
    candidates += [(owner, name, node) for (owner, name), node in definitions.methods.items() if collates(name)]
    if not candidates:
        return _module_dataset_batch(ev, definitions)
    if len(candidates) != 1:
        return None
    ((owner, name, definition),) = candidates
    if owner is None and returned_closure(definition) is not None:
        definition = returned_closure(definition)  # `def make_collate(vocab)`: its closure collates
        name = definition.name.value
    positional = list(definition.params.posonly_params) + list(definition.params.params)
    if owner is not None:
        positional = positional[1:]  # self
    required = [p for p in positional if p.default is None]
    if not required or any(p.default is None for p in definition.params.kwonly_params):
        return None
    args = [cst.Arg(value=cst.Name("_")) for _ in required]
    func = cst.Name(name) if owner is None else cst.Attribute(value=cst.Name("_"), attr=cst.Name(name))
    values = [Value(kind="unknown") for _ in required]
    target = (owner, definition)
    batch = summaries.call(ev, cst.Call(func=func, args=args), name, values, owner is not None, target=target)
    if batch is None or not _holds_padding(batch):
        return None
    return batch


def _module_dataset_batch(ev, definitions) -> Optional[Value]:
    """With no collate function in the module, a loader handed in stacks the samples of the
    module's one dataset class (a `Dataset` subclass defining `__getitem__`) with torch's
    default collate; nowhere in the module is a loader given another `collate_fn`."""
    from attnlint.analysis.flow import walk_nodes

    datasets = [
        name
        for name in definitions.classes
        if "Dataset" in definitions.bases.get(name, ()) and (name, "__getitem__") in definitions.methods
    ]
    if len(datasets) != 1:
        return None
    module = ev.project.analysis.module
    for node in walk_nodes(module):
        if isinstance(node, cst.Arg) and node.keyword is not None and node.keyword.value == "collate_fn":
            return None  # some loader here collates its own way
    sample = _called_instance(ev, Value(kind="module", module_type=datasets[0], user_class=True), None, "__getitem__")
    batch = _default_collated(sample)
    if not _holds_padding(batch):
        return None
    return batch


def _holds_padding(batch: Value) -> bool:
    if batch.padded:
        return True
    if batch.kind == "tuple":
        return any(_holds_padding(e) for e in batch.elements)
    return any(v.padded for _, v in batch.entries)
