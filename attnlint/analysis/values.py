"""Abstract values: what the analysis knows about one expression.

Every field may be unknown (``None``). Rules fire only on facts the analysis could show, so an
unknown never turns into a finding. Values are immutable; ``with_`` returns a changed copy.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Dict, FrozenSet, List, Optional, Set, Tuple

import libcst as cst

from attnlint.analysis.symbolic import ONE, Sym, product

# Roles an expression can play in attention.
QUERY = "query"
KEY = "key"
VALUE = "value"
SCORES = "scores"  # Q·Kᵀ and what flows from it up to the softmax
WEIGHTS = "weights"  # softmax(scores)
MASK = "mask"
QKV = "qkv"  # a fused projection, not yet split

# Roles of one axis of a tensor.
BATCH = "batch"
HEADS = "heads"
TOKENS = "tokens"  # a sequence axis, before it is known whether it holds queries or keys
QUERIES = "queries"
KEYS = "keys"
FEATURE = "feature"  # the per-token feature (per-head) axis

# Layouts of a score matrix.
QUERY_MAJOR = "query-major"  # (..., n_q, n_k): keys on the last axis
KEY_MAJOR = "key-major"  # (..., n_k, n_q): keys on the second-to-last axis


@dataclass(frozen=True)
class Axis:
    """One axis of a tensor: its symbolic size and what it holds, each None when unknown."""

    size: Optional[Sym] = None
    role: Optional[str] = None
    # The heads folded into this axis (`(b h)` of an einops pattern, `view(b * heads, n, d)`):
    # their count, so that scores of folded heads are still multi-head.
    folded_heads: Optional[Sym] = None


Shape = Tuple[Axis, ...]


@dataclass(frozen=True)
class Padding:
    """A padded batch: positions past each sequence's end hold `value` (None: unknown)."""

    value: Optional[float] = None
    # The expression the pad value was written as (`PAD_IDX`, `tokenizer.pad_token_id`).
    node: Optional[cst.BaseExpression] = field(default=None, compare=False)
    # The pad value is a token id (an index into a vocabulary, so >= 0) even when its number is
    # unknown: `vocab["<pad>"]`, `tokenizer.pad_token_id`, `specials.index(PAD)`.
    token_id: bool = False
    # How the pad value was written, where `node` is in another file (`self.pad_token_id` of an
    # imported collator): for messages only.
    written_as: Optional[str] = field(default=None, compare=False)


@dataclass(frozen=True)
class TokenIds:
    """Token strings and the ids the code gives them, as far as it shows them: a dict literal
    (`{"<pad>": 0, ...}`), `{t: i for i, t in enumerate(specials)}`, a list of specials (ids are
    positions). Tokens the code adds later (`+ sorted(words)`) are not listed."""

    ids: Tuple[Tuple[str, int], ...] = ()

    def id_of(self, token: str) -> Optional[int]:
        found = [i for t, i in self.ids if t == token]
        return found[0] if len(set(found)) == 1 else None


@dataclass(frozen=True)
class Constructor:
    """`torch.ones(n, n, dtype=torch.bool)`: how a tensor was created."""

    function: str  # qualified name (`torch.ones`)
    dtype: Optional[str]
    sizes: Tuple[str, ...]  # the size arguments as written
    # Built in a half dtype (True), in float32/float64 (False: also a float constructor's
    # default), or in a dtype the code does not show (None: `dtype=q.dtype`, `zeros_like(x)`).
    half: Optional[bool] = None
    # What every entry holds, where the code writes it (`torch.full(size, v)`, `.fill_(v)`).
    fill_value: Optional[cst.BaseExpression] = field(default=None, compare=False)


@dataclass(frozen=True)
class ScaleStep:
    """One factor applied to the scores: where (`s / math.sqrt(d)`, `s *= scale`, a `baddbmm`
    alpha), the expression that is the factor as written (None when it is no one expression), and
    whether the scores are divided by it. A fix rewrites `factor`; a caller's argument for a
    parameter the factor reads is where a wrong value is written."""

    node: cst.CSTNode = field(compare=False)
    factor: Optional[cst.BaseExpression] = field(default=None, compare=False)
    divides: bool = False


@dataclass(frozen=True)
class ScoreFacts:
    """How a score tensor was made, and what happened to it on the way to a softmax."""

    product: cst.CSTNode  # the Q·Kᵀ expression (`@`, matmul, bmm, einsum, baddbmm)
    layout: Optional[str]  # QUERY_MAJOR, KEY_MAJOR or None when roles do not tell
    # The key axis as a negative index, when the product itself shows it (einsum subscripts).
    key_axis: Optional[int]
    # True: a scale (or temperature) was applied on some path; False: shown absent on every path.
    scaled: Optional[bool]
    # An expression whose shape gives the contracted (per-head) dimension, and its axis, e.g.
    # (`keys`, -1); None when no operand is simple enough to name in a fix.
    feature_dim: Optional[Tuple[cst.BaseExpression, int]] = None
    # Parameters of the enclosing function the operands come from (their callers may scale them).
    operand_params: Tuple[str, ...] = ()
    # An operand is a padded batch (`pad_sequence`, and projections of it).
    padded: bool = False
    # The product of every factor multiplied into q, k or the scores on the way here, as a
    # symbolic value (`head_dim ** -0.5`); ONE when none was; None when some factor is unknown.
    scale: Optional[Sym] = None
    # The size of the contracted (per-head feature) axis, when the shapes show it.
    head_dim: Optional[Sym] = None
    # The same size read from the other operand (`k.shape[-1]` where `head_dim` is `q.shape[-1]`):
    # the contracted axes of a product are one size, whichever operand the code reads it from.
    head_dim_aliases: Tuple[Any, ...] = ()
    # Each factor applied on the way here, in order, for messages and fixes.
    scale_steps: Tuple[ScaleStep, ...] = field(default=(), compare=False)
    # The factors multiplied into q and k before the product (`q / self.temperature`).
    operand_scale_steps: Tuple[ScaleStep, ...] = field(default=(), compare=False)
    # `baddbmm(bias, q, kᵀ)`: the product adds a bias inside (scaling its result scales the bias).
    adds_bias: bool = False
    # Expressions in scope that hold the head dimension (`self.head_dim`, `d_k`), for fixes.
    head_dim_names: Tuple[str, ...] = ()
    # The named sizes of the operands' axes (a factor made of these is a size, not a temperature).
    size_atoms: Tuple[Any, ...] = ()
    # The scale as the code writes it, before sizes shown equal to numbers are substituted
    # (`C ** -0.5` where `scale` holds `0.125` because C is `n_embd = 64`); None when unknown.
    scale_as_written: Optional[Sym] = None
    # Atoms that are sizes of some tensor or layer in scope where the product is made (`C` of
    # `B, T, C = x.shape`): a factor made of these is a size, not a temperature.
    scope_size_atoms: Tuple[Any, ...] = ()
    # Numbers callers pass for size parameters (atom key, value): examples that decide only
    # what the names cannot (see scores.scale_verdict).
    size_examples: Tuple[Tuple[str, Sym], ...] = ()
    # Atoms that are the input width of a projection layer in scope (`dim` of
    # `nn.Linear(dim, inner_dim)`): the model width the heads are projected from.
    layer_input_atoms: Tuple[Any, ...] = ()
    # The size of the operands' heads axis (`h` of `b h n d`), when one is shown.
    head_count: Optional[Sym] = None

    @property
    def every_scale_step(self) -> Tuple[ScaleStep, ...]:
        """Each factor applied to q, k or the scores, those on the operands first."""
        return self.operand_scale_steps + self.scale_steps

    def scaled_by_a_size(self) -> bool:
        """Whether the one factor is an attribute holding a size (`self.dim_head`, one of the
        expressions that hold the head dimension, or named as a size), not a scale
        (`self.temperature`): a right quantity handed to the constructor, wrongly applied where
        it is used."""
        from attnlint.analysis.names import dotted, names_size

        steps = self.every_scale_step
        factor = steps[0].factor if len(steps) == 1 else None
        if not isinstance(factor, cst.Attribute):
            return False
        return dotted(factor) in self.head_dim_names or names_size(factor.attr.value)

    def scale_verdict(self):
        """Is the scale 1/sqrt(head_dim)? See :func:`attnlint.analysis.scores.scale_verdict`."""
        from attnlint.analysis.scores import scale_verdict

        return scale_verdict(self)


# Mask conventions.
ATTEND = "attend"  # True / 1 = may attend (SDPA's bool attn_mask, HF attention_mask)
MASKED = "masked"  # True / 1 = masked out (nn.MultiheadAttention masks, triu(diagonal=1))


@dataclass(frozen=True)
class MaskFacts:
    """Where a mask came from and what its True/nonzero entries mean."""

    origin: Optional[str] = None  # "causal", "padding", "argument", "lengths", ...
    convention: Optional[str] = None  # ATTEND, MASKED, or None when the code does not show it
    dtype: Optional[str] = None  # "bool", "float", "int"
    # Can some row (query) have every key masked, as the code shows? True for a mask of padded
    # queries and keys, or a literal with an empty row; False for a causal mask that keeps the
    # diagonal, or lengths shown to be at least 1; None for a padding mask alone (only a sequence
    # that is all padding would empty its row, which the code does not show).
    can_mask_whole_row: Optional[bool] = None
    # A parameter named as a padding mask (`key_padding_mask`, `attention_mask`), or one laid out
    # one value per sequence and key: it marks padded keys. Under a causal mask, left padding
    # empties the rows of the padded queries (see padding_under_causal).
    marks_padding: bool = False
    # For masks built at a fixed size (a buffer from `context_length`): the size expressions.
    built_size: Tuple[str, ...] = ()
    # For a mask written out as a literal (`torch.tensor([[1, 1, 0], [0, 0, 0]])`): the truth
    # values (1.0 / 0.0) that fill some whole row; for a threshold on query-key similarities
    # (and what `&` / `|` keep of it), those that can. A row of True given to `masked_fill` fills
    # every key of that query, whatever convention the code has in mind.
    uniform_rows: FrozenSet[float] = frozenset()
    sliced: bool = False
    buffer_attr: Optional[str] = None  # `self.<attr>` when the mask is a registered buffer
    # Where the buffer was read (`self.mask` inside `self.mask.bool()`), to slice it there.
    buffer_node: Optional[cst.CSTNode] = field(default=None, compare=False)
    # The parameter the mask came from, when it did (`attention_mask`).
    param: Optional[str] = None
    # For a combination of masks (`causal & attention_mask[:, None, None, :]`): the parameters
    # its parts came from (a combined mask is none of them, but each of them reaches its use).
    parts_from: frozenset = frozenset()
    # Multiplied or divided by a factor (`mask * -1e9`): no longer 0/1 values but a bias.
    scaled: bool = False
    # A mask parameter laid out per key (`mask[:, None, None, :]`, `view(b, 1, 1, n)`) with no
    # arithmetic: its raw values, broadcast. Travels to the functions it is handed to.
    laid_out_per_key: bool = False
    # Padding (a pad id compared with token ids) combined with a causal mask: a row is empty
    # exactly when the batch is padded on the left (see analysis.padding_side).
    padding_under_causal: bool = False
    # One padding mask laid along the queries and along the keys (`pad.unsqueeze(1) &
    # pad.unsqueeze(2)`): the row of every padded query is masked whole.
    masks_padded_queries: bool = False
    # For a bias built whole (`torch.full((T, T), -inf).triu(1)`, generate_square_subsequent_mask):
    # what its masked entries hold, "-inf" or None when the code does not show it.
    bias_fill: Optional[str] = None
    # The code shows the values are bool: the parameter is inverted with `~` where it is used
    # (`~keep[:, None, :]`), which a float bias would not survive.
    shown_bool: bool = False
    # A causal triangle is part of this mask (`causal & attention_mask[:, None, None, :]`): the
    # queries see no later key, whatever else the mask does.
    causal_part: bool = False
    # Whether a row can be emptied was made unknown by an edit of the mask (`kpm[:, 0] = False`,
    # `fill_diagonal_`, a transpose): no later layout of it says otherwise.
    rows_edited: bool = False


@dataclass(frozen=True)
class MaskLengths:
    """The query and key lengths where a mask meets the scores, and names in scope holding them.

    What a fix needs to slice a fixed-size mask to the current lengths: `T` when the code has
    unpacked it (`B, T, C = x.size()`), instead of re-reading `scores.size(-1)` at every bound.
    """

    queries: Optional[Sym]
    keys: Optional[Sym]
    query_names: Tuple[str, ...] = ()
    key_names: Tuple[str, ...] = ()

    @property
    def square(self) -> bool:
        """As many queries as keys, shown symbolically (self-attention without a KV cache)."""
        return self.queries is not None and self.queries == self.keys


@dataclass
class FillSite:
    """`scores.masked_fill(mask, value)`: where masked scores get their fill."""

    call: cst.Call
    mask_node: cst.BaseExpression
    mask: "Value"  # the value whose True entries get the fill
    fill: Optional[str]  # "-inf", "finite", or None when unknown
    in_place: bool
    # `scores + m` with m = zeros.masked_fill(mask, -inf): the same fill, as an additive mask.
    additive: bool = False
    # `torch.where(keep, scores, fill)`: mask_node holds the *kept* entries, not the filled ones.
    keeps_where_true: bool = False
    # The scores expression that is filled (`scores` in `scores.masked_fill(...)`).
    receiver_node: Optional[cst.BaseExpression] = None
    # What is filled is attention scores (not a zeros tensor becoming an additive mask).
    on_scores: bool = False
    # For an additive mask added to the scores (`scores + m`): the fill that built the mask
    # (`m = zeros.masked_fill(mask, -1e9)`), where its constant is written.
    source: Optional["FillSite"] = None
    # What is filled is a tensor made here in float32 (`torch.zeros(n, n).masked_fill(...)`):
    # added to half scores it promotes the sum, so its fill never meets a half dtype.
    float32_receiver: bool = False
    # A finite fill after a -inf one (`s.masked_fill(rows_all_masked, 0.0)`): a guard that
    # restores the rows the -inf fill emptied, not a mask of its own.
    restores: bool = False
    # `scores * mask`: the mask multiplied in, so masked scores become 0 (which a softmax still
    # weighs as exp(0)), not -inf.
    multiplied: bool = False
    # The scores' query and key lengths at this fill (None when the scores' shape is unknown).
    lengths: Optional[MaskLengths] = None
    # An out-of-place fill whose result is thrown away (`scores.masked_fill(m, -inf)` as a
    # statement): it fills nothing that is used.
    discarded: bool = False
    # What is filled is attention weights, after their softmax (FunctionFacts.weight_fills).
    on_weights: bool = False

    @property
    def adds_the_mask(self) -> bool:
        """`scores + mask`: the mask itself is added, with no fill of its own. Not a tensor
        filled elsewhere whose fill is not known here (`bias.masked_fill(m, min_dtype)`): what
        that adds is the fill, not the mask's 0/1."""
        return self.additive and self.fill is None and self.source is None


@dataclass
class MaskUseSite:
    """A mask handed to an attention API, with the convention that API expects."""

    call: cst.Call
    api: str  # "sdpa", "mha", "transformer", ...
    keyword: str  # attn_mask, key_padding_mask, src_key_padding_mask, ...
    expects: str  # ATTEND or MASKED
    mask_node: cst.BaseExpression
    mask: "Value"
    # The attention's query and key lengths at this call (None when unknown).
    lengths: Optional[MaskLengths] = None


@dataclass
class AttentionCallSite:
    """A call that computes attention: SDPA, nn.MultiheadAttention, nn.Transformer*, a submodule."""

    call: cst.Call
    api: str  # "sdpa", "mha", "transformer", "submodule"
    inputs: Tuple["Value", ...]
    mask_keywords: Tuple[str, ...]  # the mask arguments that were passed
    is_causal: bool = False
    # For api == "submodule": the class whose forward is called, when defined in this file.
    callee_class: Optional[str] = None
    # The value given for `is_causal` (its `truth` says whether it holds on ordinary inputs).
    causal_flag: Optional["Value"] = None
    # Where `is_causal` is written, when not in the call itself (`**kwargs` of a dict built here).
    causal_flag_node: Optional[cst.BaseExpression] = None


@dataclass
class LossSite:
    """A cross-entropy call and the targets it was given."""

    call: cst.Call
    targets: "Value"
    targets_node: cst.BaseExpression
    # The ignore_index as an int when known; None when written as an expression we cannot read.
    ignore_index: Optional[int]
    ignore_index_node: Optional[cst.BaseExpression]
    # Where `ignore_index=` goes: the F.cross_entropy call or the nn.CrossEntropyLoss(...) ctor.
    configured_at: Optional[cst.Call]
    # "mean", "sum", "none", or None when written as an expression.
    reduction: Optional[str] = "mean"
    # Class weights given: padding may be weighted out (`weight[pad] = 0`) instead of ignored.
    weighted: bool = False
    # ignore_index names the pad token's id, whose number is unknown (`ignore_index=pad_id`,
    # `tokenizer.pad_token_id`): an index into the vocabulary, never negative.
    ignores_token_id: bool = False


@dataclass
class WeightUses:
    """How the weights of one softmax call are used, over every evaluation of that call."""

    contracted_axes: Set[int] = field(default_factory=set)
    renormalized: bool = False
    # The weights, or a view of them whose axes the analysis lost count of (`w.unsqueeze(1)`),
    # were a factor of a product with a tensor that is no learned matrix (`bmm(w.unsqueeze(1),
    # enc)`): they weight values, whichever axis that product sums.
    weigh_values: bool = False


@dataclass
class SoftmaxSite:
    """One softmax call, and what the code around it shows about its axes."""

    call: cst.Call
    input: "Value"
    input_node: Optional[cst.BaseExpression]
    # The `dim` as written: an int (maybe negative), None when no dim was given.
    dim: Optional[int]
    dim_given: bool
    dim_known: bool  # False when dim is an expression we cannot evaluate
    # The node holding the dim value (to rewrite), or None.
    dim_node: Optional[cst.CSTNode]
    form: str  # "function", "method" or "module" (nn.Softmax built elsewhere)
    # For form == "module": the nn.Softmax(...) constructor call.
    module_ctor: Optional[cst.Call] = None
    # The function the call is in.
    function: Optional[str] = None
    # What every evaluation of this call learns about its weights, in its own function and in
    # the callers its weights are returned to (shared by all the sites of one call node).
    uses: "WeightUses" = field(default_factory=lambda: WeightUses())
    # For each use of the weights (a product with the values, a return, a call): whether the
    # value that reaches it has its fully masked rows zeroed (where / masked_fill / nan_to_num).
    guard_uses: List[bool] = field(default_factory=list)
    # Factors multiplied into the weights after the softmax (`softmax(s) / sqrt(d)`): the
    # expression and its symbolic value (None when unknown).
    scaled_after: List[Tuple[cst.CSTNode, Optional[Sym]]] = field(default_factory=list)
    # For a helper's softmax read for one call: the dim is the helper's parameter, bound by that
    # call (`def masked_softmax(scores, mask, dim=1)` called without dim), and the call itself.
    dim_bound_by: Optional[cst.Call] = None

    def axis_names(self) -> Optional[Tuple[str, ...]]:
        """What each axis of the scores holds (`batch`, `heads`, `queries`, `keys`, `axis 1`),
        from the product's layout and the shapes; None when the rank is unknown."""
        from attnlint.analysis.shapes import score_axis_names

        return score_axis_names(self.input)

    @property
    def rank(self) -> Optional[int]:
        return self.input.rank

    @property
    def weighs_values(self) -> bool:
        """Its weights are summed against values somewhere (the mark of attention weights, with
        or without a Q·Kᵀ product: additive scores `v(tanh(W q + U k))` too)."""
        return bool(self.uses.contracted_axes) or self.uses.weigh_values

    @property
    def contracted_axes(self) -> Set[int]:
        """Negative axes of the weights that later code contracts with values (`w @ v` -> -1)."""
        return self.uses.contracted_axes

    @property
    def renormalized(self) -> bool:
        """The weights were divided again (Sinkhorn-style alternating normalisation, here or in
        a caller the weights are returned to): not plain attention."""
        return self.uses.renormalized

    @renormalized.setter
    def renormalized(self, value: bool) -> None:
        self.uses.renormalized = value

    @property
    def guarded(self) -> bool:
        """Every use of the weights sees them guarded (a guard on one branch, or one whose result
        is thrown away, does not count)."""
        return bool(self.guard_uses) and all(self.guard_uses)

    def key_axis(self) -> Optional[int]:
        """The axis that holds the keys, as a negative index, or None when the code does not show it.

        Two independent witnesses: the layout of the Q·Kᵀ product (operand roles, einsum
        subscripts) and the axis later contracted with the values (`w @ v` sums over w's last
        axis). When both speak they must agree; a disagreement means we understand neither.
        """
        scores = self.input.scores
        by_product = scores.key_axis if scores is not None else None
        by_use = next(iter(self.contracted_axes)) if len(self.contracted_axes) == 1 else None
        if len(self.contracted_axes) > 1:
            return None
        if by_product is not None and by_use is not None and by_product != by_use:
            return None
        if by_product is not None:
            return by_product
        if by_use is not None:
            return by_use
        return self._key_axis_by_roles() if scores is None else None

    def _key_axis_by_roles(self) -> Optional[int]:
        """Weights that are not a Q·Kᵀ product over a (sequence, batch) tensor: the sequence axis
        (additive attention over time-major encoder outputs)."""
        from attnlint.analysis.shapes import axis_role

        if self.input.shape is None:
            return None
        roles = [axis_role(self.input, axis) for axis in range(len(self.input.shape))]
        tokens = [i for i, r in enumerate(roles) if r in (TOKENS, KEYS)]
        if len(tokens) != 1 or any(r not in (TOKENS, KEYS, BATCH) for r in roles):
            return None
        return tokens[0] - len(roles)

    def attention_without_product(self) -> bool:
        """Attention weights made without a Q·Kᵀ product (additive or graph attention) whose key
        axis the code shows: contracted with the values, or the one sequence axis next to the
        batch."""
        if self.input.scores is not None or self.renormalized:
            return False
        key = self.key_axis()
        if key is None:
            return False
        if not self.contracted_axes:
            return True  # by roles: the sequence axis of a (sequence, batch) tensor
        if self.input.pairwise and self.contracted_axes == {-1} and self.rank is not None:
            # `a @ b.transpose(1, 2)` normalised, then contracted over its last axis, b's rows:
            # both the product and the use say the keys are last.
            return True
        # By use: a softmax contracted over another axis than its own is also how a mixture of
        # softmaxes is written; attention weights over a square (node x node) matrix are not.
        axes = self.normalized_axes()
        if not axes or len(axes) != 1:
            return False
        if self.padding_marks_keys(key, next(iter(axes))):
            return True
        from attnlint.analysis.shapes import axis_role

        if axis_role(self.input, next(iter(axes))) == BATCH and axis_role(self.input, key) != BATCH:
            # Normalised across the samples of the batch, contracted along another axis (SK
            # attention's branch weights stacked as (k, bs, c, 1, 1), softmax(dim=1)): no mixture
            # of softmaxes normalises samples against one another.
            return True
        size = self.input.size_of(next(iter(axes)))
        return size is not None and size.int_value != 1 and size == self.input.size_of(key)

    def padding_marks_keys(self, key: int, normalized: int) -> bool:
        """A second witness for the key axis: the scores are filled by a mask that varies along
        the axis later contracted with the values and is constant (broadcast) along the one
        normalised. Such a mask masks keys: the contraction and the mask agree on where
        they are, and a softmax along the broadcast axis normalises each padded key's column
        of fills, which is no attention."""
        from attnlint.analysis.masks import broadcast_axes

        if key == normalized:
            return False
        for fill in self.input.fills:
            axes = broadcast_axes(fill, self.rank)
            if axes is not None and key in axes[1] and normalized in axes[0]:
                return True
        return False

    def normalized_axes(self) -> Optional[Set[int]]:
        """The axis softmax normalises over, as negative indices for each rank the scores may have.

        One element when the rank is known or the dim is negative; None when the dim is unknown.
        """
        if self.dim_given and not self.dim_known:
            return None
        ranks = [self.rank] if self.rank is not None else list(range(2, 7))
        axes = set()
        for rank in ranks:
            dim = self.dim if self.dim_given else implicit_softmax_dim(rank)
            if dim is None:
                return None
            axes.add(dim if dim < 0 else dim - rank)
        return axes


def implicit_softmax_dim(rank: int) -> int:
    """What PyTorch picks when softmax gets no dim (torch.nn.functional._get_softmax_dim)."""
    return 0 if rank in (0, 1, 3) else 1


@dataclass
class ViewSite:
    """A `view`/`reshape` whose input and target shapes are both known symbolically."""

    call: cst.Call
    input_dims: Tuple[Sym, ...]
    target_dims: Tuple[Sym, ...]
    # Runs of axes ((input start, input end), (target start, target end)) between which the
    # sizes are regrouped. A run with several axes on both sides moves data between axes in a
    # way no split or merge of adjacent axes does: the sizes match, the memory order does not.
    regrouped: Tuple[Tuple[Tuple[int, int], Tuple[int, int]], ...]
    input_node: Optional[cst.BaseExpression] = None
    # The input's memory has no axes to lose: just padded or concatenated (`F.pad(scores, (1,
    # 0))`, the relative-position skew, which rereads memory on purpose), or a new tensor
    # (`torch.randn(2, 3, 4)` in a smoke test). See view_order.rereads_on_purpose.
    rereads_on_purpose: bool = False

    @property
    def transposes_by_view(self) -> bool:
        """The view swaps axes in size but not in memory (a transpose was meant): no split or
        merge of adjacent axes gives the target (see view_order.mixes_memory)."""
        from attnlint.analysis.view_order import mixes_memory, named_atoms, swaps_literal_sizes

        inputs = {a.key for d in self.input_dims for a in d.atoms()}
        if any(".shape[" in a.name and a.key not in inputs for d in self.target_dims for a in d.atoms()):
            # The target is written with sizes read from another tensor (`v.size(1) * v.size(2)`
            # for scores whose sizes came from q): equal at run time, perhaps, but not shown.
            return False
        if None not in self.input_dims + self.target_dims:
            named = named_atoms(self.input_dims)
            for dim in self.target_dims:
                over = [atom for atom, e in dim.factors if e < 0 and atom not in named]
                if over and len([atom for atom, e in dim.factors if e > 0 and atom in named]) > 1:
                    # `view(b, t, -1, h, w)` of a `(b_it, c, h, w)` tensor whose `b_it` is `b * t`
                    # (the code does not show it): the inferred `b_it * c / (b * t)` divides two
                    # sizes by ones the input does not name, and which it divides is unknown.
                    return False
        mixes = mixes_memory(self.input_dims, self.target_dims)
        if mixes is None:
            return bool(self.swapped_runs())
        if mixes and mixes_memory(*self._unnamed_sizes_as_one()) is False:
            # Only because of a size the code never named (`b, _, n, _ = x.shape`), which may be
            # 1 (a broadcast axis), and a size of 1 goes anywhere: not shown.
            return False
        return mixes or swaps_literal_sizes(self.input_dims, self.target_dims)

    def _unnamed_sizes_as_one(self):
        unnamed = {
            a.key: ONE
            for d in self.input_dims + self.target_dims
            for a in d.atoms()
            if a.key.endswith("#unnamed")  # flow.UNNAMED_SIZE: a size unpacked as `_`
        }
        if not unnamed:
            return self.input_dims, self.target_dims
        return tuple(d.substitute(unnamed) for d in self.input_dims), tuple(d.substitute(unnamed) for d in self.target_dims)

    def swapped_runs(self) -> List[Tuple[Tuple[int, int], Tuple[int, int]]]:
        """Runs where an axis of the input keeps its size in the target but moves among the
        other axes of its run (`(b, n, h*d) -> (b, h, n, d)`: `n` moves behind `h`). A split or a
        merge of adjacent axes never does that: it keeps a carried axis at a run boundary."""
        out = []
        for (i0, i1), (t0, t1) in self.regrouped:
            if i1 - i0 < 2 or t1 - t0 < 2:
                continue
            src, dst = list(self.input_dims[i0:i1]), list(self.target_dims[t0:t1])
            carried = [d for d in src if not d.is_const and src.count(d) == 1 and dst.count(d) == 1]
            if any(
                _sizes_unrelated(self.input_dims, self.target_dims, i0 + src.index(d), t0 + dst.index(d)) for d in carried
            ):
                continue
            if any(src.index(d) != dst.index(d) for d in carried) or (
                len(carried) >= 2 and [d for d in dst if d in carried] != carried
            ):
                out.append(((i0, i1), (t0, t1)))
        return out


def _sizes_unrelated(input_dims, target_dims, input_index: int, target_index: int) -> bool:
    """The axes in front of a carried axis (at `input_index` in the input, `target_index` in
    the target) differ by a size the input does not hold, even once each written quotient is
    named (`c / heads` makes `heads` part of c): `(b, H, n, D) -> (heads * b, n, H * D / heads)`
    with H read off a shape and `heads` from the config. They may be one size at run time, and
    then the carried axis sits at the same place in memory: not shown either way."""
    dims = list(input_dims) + list(target_dims)
    if any(d is None for d in dims):
        return False
    from attnlint.analysis.view_order import quotients_named

    named = quotients_named(dims) or dims
    source, target = named[: len(input_dims)], named[len(input_dims) :]
    ratio = product(target[:target_index]) / product(source[:input_index])
    if ratio is None or ratio == ONE:
        return False
    held = {a.key for d in source for a in d.atoms()}
    return any(a.key not in held for a in ratio.atoms())


@dataclass(frozen=True)
class Value:
    kind: str = "tensor"  # "tensor", "scalar", "module", "tuple", "shape", "unknown"
    rank: Optional[int] = None
    role: Optional[str] = None
    # Last axis is the feature (head) dimension: true for projections of tokens.
    feature_last: Optional[bool] = None
    # The feature axis was moved to -2 (k.transpose(-2, -1), k.permute(0, 2, 3, 1), k.mT): ready
    # to be the right operand of a Q·Kᵀ product. `base` is the value before that move.
    feature_transposed: bool = False
    base: Optional["Value"] = None
    node: Optional[cst.CSTNode] = None  # the expression that produced this value
    scaled: Optional[bool] = None  # for q/k: a scale was multiplied in
    # For q/k/scores: the product of the factors multiplied in (see ScoreFacts.scale).
    scale: Optional[Sym] = None
    # For q/k: each factor multiplied in, in order (where a wrong one is written).
    scale_steps: Tuple[ScaleStep, ...] = field(default=(), compare=False)
    scores: Optional[ScoreFacts] = None
    softmax: Optional[SoftmaxSite] = field(default=None, compare=False)
    # The softmax these are the weights of, kept through views that renumber axes (unsqueeze,
    # squeeze, transposes) where `softmax`, which also tells the axes, is dropped.
    weights_of: Optional[SoftmaxSite] = field(default=None, compare=False)
    # A product `x * w` of softmax weights and a value that may be a tensor or a number (a
    # parameter of unknown rank): summing it (`.sum(dim)`) makes the weights weigh values.
    weighted_by: Optional[SoftmaxSite] = field(default=None, compare=False)
    mask: Optional[MaskFacts] = None
    is_parameter: bool = False  # a weight, not an activation
    # For tensors: each axis's symbolic size and role (len == rank), or None when not known.
    shape: Optional[Shape] = None
    # For kind == "scalar": the symbolic value (`dim // heads`, `x.shape[-1] ** -0.5`).
    sym: Optional[Sym] = None
    # For kind == "module": the nn class name (Linear, Softmax, ...) and its constructor call.
    module_type: Optional[str] = None
    # A torch module of one of several types by path (`nn.LayerNorm(d) if qk_norm else
    # nn.Identity()`): module_type is None, and a call is each type's call, joined.
    module_choices: Tuple[str, ...] = ()
    ctor: Optional[cst.Call] = None
    user_class: bool = False  # a module whose class is defined in the checked code
    custom_init: bool = False  # a projection whose weights __init__ sets by hand
    # For kind == "tuple": the element values; `each` when the count is unknown but all alike.
    elements: Tuple["Value", ...] = ()
    each: Optional["Value"] = None
    # A product of two activations, the second with its last two axes swapped (`a @ b.transpose(1,
    # 2)`): shaped like scores over b's rows, though no role says which operand is the query.
    pairwise: bool = False
    # For a tuple whose length is unknown (`(*input_shape, -1, head_dim)`, `x.size()[:-1] +
    # (heads, head_size)`): the elements known to end it.
    known_tail: Tuple["Value", ...] = ()
    # For a tuple display that spreads one tensor's shape (`(*x.shape, self.heads)`): that shape
    # (a kind == "shape" value), and the elements written before it (known_tail: after it).
    spread_shape: Optional["Value"] = None
    spread_head: Tuple["Value", ...] = ()
    # For kind == "scalar": a known integer value.
    int_value: Optional[int] = None
    # The literal None: a parameter left at its `None` default by every call (`if attention_dim
    # is None: attention_dim = dim // heads` then takes its branch).
    is_none: bool = False
    # For kind == "shape": the tensor whose shape this is, and the name it is bound to.
    shape_of: Optional["Value"] = None
    shape_owner: Optional[str] = None
    # Data facts (kept through reshapes): the parameter this came from, a lengths tensor, a
    # padded batch, a tensor made by a constructor.
    param: Optional[str] = None
    lengths: bool = False
    # Lengths shown to be at least 1: given to `pack_padded_sequence`, which rejects a length
    # of 0, so a mask from them keeps a key in every row.
    positive_lengths: bool = False
    padding: Optional[Padding] = None
    constructor: Optional[Constructor] = None
    # Score fills on the way to the softmax (masked_fill, where, additive masks), and whether
    # some path lacks them.
    fills: Tuple["FillSite", ...] = ()
    fills_partial: bool = False
    # `zeros.masked_fill(mask, -inf)`: an additive mask in the making.
    additive_fill: Optional["FillSite"] = None
    # Out-of-place fills of this tensor whose result was thrown away (`scores.masked_fill(m,
    # -inf)` as a statement): what reaches a softmax with them was meant to be masked and is not.
    dropped_fills: Tuple["FillSite", ...] = ()
    # `k.transpose(a, a + 1)` on a rank we do not know yet: the larger axis (see matmul).
    pending_swap: Optional[int] = None
    # For attention weights: fully masked rows were zeroed on the way to this value (a guard
    # is a fact of the value that reaches a use, joined over paths like every other fact).
    guarded: bool = False
    # Holds integer ids (token or item indices): the input of an nn.Embedding, an integer
    # literal batch, `torch.randint`. Compared with 0 (the conventional pad id) it gives a
    # padding mask.
    token_ids: bool = False
    # A dtype object (`x.dtype` of a float activation, handed to a helper that casts a mask with
    # `.to(dtype)`): the kind of values it casts to ("float", "bool", "int").
    names_dtype: Optional[str] = None
    # Memory laid out by padding or concatenation and reread by a view (the relative-position
    # skew): slices and further views of it do index arithmetic too (view_order.rereads_on_purpose).
    reread_memory: bool = False
    # The size of the last axis when the rank (so the shape) is not known: a projection's width.
    last_size: Optional[Sym] = None
    # When the rank is not known: sizes of axes counted from the front (`x.split(d, 2)`: axis 2
    # holds d), as (id of the expression that made this value, ((axis, size), ...)). They hold
    # only for the value that expression made: whatever moves axes makes a new value, and
    # size_of reads them only while `node` is still that expression.
    front_sizes: Optional[Tuple[int, Tuple[Tuple[int, Sym], ...]]] = None
    # For modules: the sizes their constructor was given (`nn.Linear(dim, inner * 3)`).
    module_sizes: Tuple[Optional[Sym], ...] = ()
    # For an nn.CrossEntropyLoss: its `ignore_index` as read where it was built
    # (`nn.CrossEntropyLoss(ignore_index=cfg.ignore_index)` in `__init__`, with `cfg: Config`).
    ignore_index: Optional[int] = None
    # A known callable referred to, not called (`self.attend = F.scaled_dot_product_attention`):
    # its canonical qualified name, so that calling the name or attribute later is that call.
    function: Optional[str] = None
    # A function of the checked code referred to, not called (`attention_interface =
    # eager_attention_forward`): calling the name later is a call of that function.
    user_function: Optional[str] = None
    # One of several functions of the checked code, by a key the analysis cannot read
    # (`ATTENTION_FUNCTIONS[impl]` of `{"eager": eager_attention_forward, "sdpa": ...}`): a
    # call is a call of each.
    function_choices: Tuple[str, ...] = ()
    # For `functools.partial(f, pad_id=pad)` of such a function: the partial call and the values
    # of the arguments it binds (its args after `f`), which every later call passes first.
    bound_call: Optional[Tuple[cst.Call, Tuple["Value", ...]]] = field(default=None, compare=False)
    # The summaries of the other file of the project that defines `user_function`, for a partial
    # handed back by a function imported from there (`make_collate_fn(tok)` of `.data`).
    function_home: Optional[object] = field(default=None, compare=False)
    # A function a factory of the module defined and returned (`self._attention_call =
    # _sdpa_or_flex_attention()`): (the factory's call, the factory, the closure, the factory's
    # argument values), so that calling it runs the closure in that factory call's scope.
    closure: Optional[tuple] = field(default=None, compare=False)
    # For flags: True when the value holds on the code's ordinary paths (the literal True, a test
    # that a size exceeds one, `T > 1`), False when it never does (False, None); None: unknown.
    # See attnlint.analysis.attention_flags.
    truth: Optional[bool] = None
    # For kind == "scalar": a string constant's text (token strings such as "<pad>").
    text: Optional[str] = None
    # A vocabulary (token -> id), for dicts and lists of token strings (see TokenIds).
    vocabulary: Optional[TokenIds] = None
    # For kind == "scalar": a token id (>= 0) whose number may be unknown (`vocab["<pad>"]`).
    token_id: bool = False
    # Similarities of two different sets of vectors, pair by pair (`cosine_similarity(q[:, None],
    # keys[None])`, `cdist(q, keys)`): a row per query, like scores.
    similarity: bool = False
    # For a dict with string keys (`{"input_ids": ids, "labels": labels}`, a batch): each key's
    # value, as far as the code shows them.
    entries: Tuple[Tuple[str, "Value"], ...] = ()

    def entry(self, key: str) -> Optional["Value"]:
        for name, value in self.entries:
            if name == key:
                return value
        return None

    def with_entry(self, key: str, value: "Value") -> "Value":
        kept = tuple((k, v) for k, v in self.entries if k != key)
        return self.with_(entries=kept + ((key, value),))

    def with_(self, **changes: Any) -> "Value":
        """A copy with `changes` (dataclasses.replace, without re-running __init__ over all the
        fields: the analysis makes tens of thousands per file)."""
        unknown = changes.keys() - _VALUE_FIELDS
        if unknown:
            raise TypeError(f"Value has no field {sorted(unknown)[0]!r}")
        copy = object.__new__(Value)
        state = copy.__dict__
        state.update(self.__dict__)
        state.update(changes)
        return copy

    @property
    def padded(self) -> bool:
        return self.padding is not None

    def dims(self) -> Optional[Tuple[Optional[Sym], ...]]:
        """The symbolic size of each axis, when the shape is known."""
        return None if self.shape is None else tuple(a.size for a in self.shape)

    def axis_roles(self) -> Optional[Tuple[Optional[str], ...]]:
        return None if self.shape is None else tuple(a.role for a in self.shape)

    def size_of(self, axis: int) -> Optional[Sym]:
        if self.shape is None:
            if axis == -1 and self.last_size is not None:
                return self.last_size
            return self._front_size(axis)
        if not -len(self.shape) <= axis < len(self.shape):
            return None
        return self.shape[axis].size

    def _front_size(self, axis: int) -> Optional[Sym]:
        if self.front_sizes is None or self.node is None or self.front_sizes[0] != id(self.node):
            return None
        if axis < 0:
            if self.rank is None or axis < -self.rank:
                return None
            axis += self.rank
        return dict(self.front_sizes[1]).get(axis)

    def data_facts(self) -> dict:
        """The facts about the data (not the layout) that survive a reshape."""
        return {
            "param": self.param,
            "lengths": self.lengths,
            "positive_lengths": self.positive_lengths,
            "padding": self.padding,
            "token_ids": self.token_ids,
        }


_FIELDS_OF_VALUE = fields(Value)
_VALUE_FIELDS = frozenset(f.name for f in _FIELDS_OF_VALUE)
UNKNOWN = Value(kind="unknown")


def join(a: Optional[Value], b: Optional[Value]) -> Value:
    """The value of a name that is `a` on one path and `b` on another: keep what both agree on."""
    if a is None or b is None:
        return UNKNOWN
    if a is b:
        return a
    # A submodule that is None on some paths (`self.dropout = None` unless a rate is given):
    # wherever it is called it is the module, since calling None would fail (the code guards
    # the call with `if self.dropout is not None:`).
    for none, other in ((a, b), (b, a)):
        if other.kind == "module" and none.kind == "scalar" and none.is_none:
            return other
        # Likewise a loader that is None unless validation files are given: wherever it is
        # iterated it is the loader.
        if other.kind == "tuple" and other.each is not None and not other.elements and none.is_none:
            return other
    # An empty list literal joined with a list of rows (rows appended in a loop that may not
    # run): what holds of every row holds of both.
    for empty, other in ((a, b), (b, a)):
        if empty.kind == other.kind == "tuple" and not empty.elements and empty.each is None and not empty.padded:
            if isinstance(empty.node, (cst.List, cst.Tuple)):
                return other
    # An empty `nn.ModuleList()` joined with the modules a loop appends to it: those modules.
    for empty, other in ((a, b), (b, a)):
        if empty.kind == "module" and empty.module_type == "ModuleList" and other.kind == "tuple":
            if not other.elements and other.each is not None and other.each.kind == "module":
                return other
    # A tensor from a constructor before and after a loop fills its rows (`ids[i, :len(s)] = s`):
    # unfilled it holds only the fill value, which is what its padding is on the other path.
    for plain, filled in ((a, b), (b, a)):
        if filled.padded and not plain.padded and plain.constructor is not None:
            if plain.with_(padding=filled.padding) == filled:
                return filled
        # Likewise a mask of zeros a loop writes ones into (`mask[i, :n_i, :m_i] = 1`): unwritten,
        # every entry is masked, which only masks more.
        if filled.mask is not None and plain.mask is None and plain.constructor is not None:
            if filled.mask.origin in ("lengths", "scattered") and plain.with_(mask=filled.mask) == filled:
                return filled
    changes: Dict[str, Any] = {}
    for name, special, default in _JOIN_FIELDS:
        va, vb = getattr(a, name), getattr(b, name)
        if special is None:
            # Most fields: what both paths agree on, else the field's default.
            changes[name] = va if va is vb or va == vb else default()
        elif special is not _SKIP:
            changes[name] = special(a, b, va, vb)
    # -inf fills from either path are kept (a NaN on one path is a NaN), marked partial when
    # some path lacks them.
    fa, fb = a.fills, b.fills
    fills = tuple(fa) + tuple(f for f in fb if all(f is not g for g in fa))
    changes["fills"] = fills
    changes["fills_partial"] = bool(fills) and bool(
        a.fills_partial
        or b.fills_partial
        or any(all(f is not g for g in fb) for f in fa)
        or any(all(f is not g for g in fa) for f in fb)
    )
    if changes.get("shape") is not None and changes.get("rank") != len(changes["shape"]):
        changes["shape"] = None
    if a.kind == b.kind == "tuple" and a.elements != b.elements and not a.known_tail and not b.known_tail:
        # Tuples on two paths: of one length, each element joined; of two lengths (`*qkv` given
        # three tensors by one caller and none by another), some number of elements, each what
        # holds of all of them.
        if len(a.elements) == len(b.elements):
            changes["elements"] = tuple(join(x, y) for x, y in zip(a.elements, b.elements))
        elif changes.get("each") is None:
            parts = list(a.elements) + list(b.elements) + [x for x in (a.each, b.each) if x is not None]
            each = parts[0] if parts else None
            for part in parts[1:]:
                each = join(each, part)
            changes["each"] = each
    # A mask that is None on the other path (`self.mask = None` unless causal, `mask if c else
    # None`): wherever it is used as a mask it is this one, since None masks nothing.
    for none, other in ((a, b), (b, a)):
        if other.mask is not None and is_none_literal(none):
            changes["mask"] = other.mask
    return Value(**changes)


def _join_module_choices(a: Value, b: Value) -> Tuple[str, ...]:
    """The torch module types a name may hold on either path (none for classes of the checked
    code, whose forward is summarised instead, or when a path holds no known module)."""
    choices = []
    for value in (a, b):
        if value.kind != "module" or value.user_class:
            return ()
        types = value.module_choices or ((value.module_type,) if value.module_type else ())
        if not types:
            return ()
        choices += [t for t in types if t not in choices]
    return tuple(choices) if len(choices) > 1 else ()


def _opaque(value: Value) -> bool:
    """A value the analysis knows nothing of (no kind, callable or fact it could contradict)."""
    return value.kind == "unknown" and value.function is None and value.user_function is None


def is_none_literal(value: Value) -> bool:
    """The value of the literal `None`."""
    return value.is_none or (
        value.kind == "scalar" and isinstance(value.node, cst.Name) and value.node.value == "None"
    )


def _join_masks(a: Optional[MaskFacts], b: Optional[MaskFacts]) -> Optional[MaskFacts]:
    """Two masks of one origin (the causal buffer, or that buffer `&` a caller's mask): what both
    paths agree on. Masks of different origins share nothing."""
    if (a is None) != (b is None):
        # A fixed-size buffer on one path only (`att_mask = self.mask` when causal): on that path
        # it reaches the use unsliced. Only where it came from is kept, not what True means.
        known = a or b
        if known.buffer_attr is None:
            return None
        return MaskFacts(
            origin=known.origin,
            built_size=known.built_size,
            sliced=known.sliced,
            buffer_attr=known.buffer_attr,
            buffer_node=known.buffer_node,
        )
    if a is not None and b is not None and a.origin != b.origin and _causal_with_more(a, b):
        # The causal triangle on one path, it `&` (or `|`) a padding mask on the other (`allowed =
        # causal; if attention_mask is not None: allowed = allowed & pad`): rows the second path
        # empties are empty on that path, and a NaN on one path is a NaN.
        grown, plain = (a, b) if a.origin == "combined" else (b, a)
        return MaskFacts(
            origin="combined",
            convention=a.convention if a.convention == b.convention else None,
            dtype=a.dtype if a.dtype == b.dtype else None,
            can_mask_whole_row=True if grown.can_mask_whole_row else None,
            marks_padding=grown.marks_padding,
            padding_under_causal=grown.padding_under_causal,
            masks_padded_queries=grown.masks_padded_queries,
            causal_part=True,
        )
    if a is None or b is None or a.origin != b.origin or a.origin is None:
        return None
    if a == b:
        return a if a.buffer_node is not None else b

    def agreed(name, unknown=None):
        x, y = getattr(a, name), getattr(b, name)
        return x if x == y else unknown

    return MaskFacts(
        origin=a.origin,
        convention=agreed("convention"),
        dtype=agreed("dtype"),
        can_mask_whole_row=agreed("can_mask_whole_row"),
        built_size=agreed("built_size", ()),
        uniform_rows=a.uniform_rows & b.uniform_rows,
        sliced=a.sliced or b.sliced,  # sliced on some path: whether the other is, is not shown
        buffer_attr=agreed("buffer_attr"),
        buffer_node=a.buffer_node if a.buffer_node is not None else b.buffer_node,
        param=agreed("param"),
        # The parameters a mask may come from (`encoder_attention_mask if is_cross else
        # attention_mask`): each reaches wherever this one does.
        parts_from=a.parts_from | b.parts_from | (frozenset(p for p in (a.param, b.param) if p) if a.param != b.param else frozenset()),
        scaled=a.scaled or b.scaled,
        marks_padding=a.marks_padding and b.marks_padding,
        padding_under_causal=a.padding_under_causal and b.padding_under_causal,
        causal_part=a.causal_part and b.causal_part,
        rows_edited=a.rows_edited or b.rows_edited,
    )


def _causal_with_more(a: MaskFacts, b: MaskFacts) -> bool:
    """One path's mask is a causal triangle, the other's that triangle combined with more."""
    for plain, grown in ((a, b), (b, a)):
        if plain.origin == "causal" and grown.origin == "combined" and grown.causal_part:
            return plain.convention in (None, grown.convention)
    return False


def _join_shapes(a: Optional[Shape], b: Optional[Shape]) -> Optional[Shape]:
    """Per axis: the size and role both paths agree on."""
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(Axis(x.size if x.size == y.size else None, x.role if x.role == y.role else None) for x, y in zip(a, b))


def _join_tristate(a: Optional[bool], b: Optional[bool]) -> Optional[bool]:
    return a if a == b else None


def _join_scores(a: Optional[ScoreFacts], b: Optional[ScoreFacts]) -> Optional[ScoreFacts]:
    if a is None or b is None:
        return None
    if a.product is not b.product:
        return None
    return replace(
        a,
        scaled=_join_tristate(a.scaled, b.scaled),
        scale=a.scale if a.scale == b.scale else None,
        scale_as_written=a.scale_as_written if a.scale_as_written == b.scale_as_written else None,
        head_dim=a.head_dim if a.head_dim == b.head_dim else None,
        layout=a.layout if a.layout == b.layout else None,
        key_axis=a.key_axis if a.key_axis == b.key_axis else None,
    )


_SKIP = object()


def _identical_or_none(a, b, va, vb):
    return va if va is vb else None


def _joined_dropped_fills(a, b, va, vb):
    # A fill thrown away on some path is thrown away there.
    return tuple(va) + tuple(x for x in vb if all(x is not y for y in va))


def _joined_additive_fill(a, b, va, vb):
    # Like score fills: a mask filled on one path (`if mask is not None: mask =
    # mask.masked_fill(...)`) holds that fill wherever it is used.
    return va if vb is None or va is vb else (vb if va is None else None)


def _joined_user_function(a, b, va, vb):
    # A function of the code on one path, an implementation the analysis cannot see on the
    # other (`ALL_ATTENTION_FUNCTIONS[impl]`, interchangeable by contract): a call through the
    # name reaches the function wherever it holds it, with these arguments.
    other = b if va is not None else a
    return va if va == vb else (va or vb) if _opaque(other) else None


# How `join` treats each field of Value: None, kept where both paths agree; _SKIP, computed after
# the loop (fills); else a function of (a, b, a's field, b's field).
_SPECIAL_JOINS = {
    "softmax": _identical_or_none,
    "weights_of": _identical_or_none,
    "weighted_by": _identical_or_none,
    "bound_call": _identical_or_none,
    "function_home": _identical_or_none,
    "closure": _identical_or_none,
    "scores": lambda a, b, va, vb: _join_scores(va, vb),
    "scaled": lambda a, b, va, vb: _join_tristate(va, vb),
    "fills_partial": _SKIP,
    "fills": _SKIP,
    "dropped_fills": _joined_dropped_fills,
    "additive_fill": _joined_additive_fill,
    "shape": lambda a, b, va, vb: _join_shapes(va, vb),
    "mask": lambda a, b, va, vb: _join_masks(va, vb),  # and see the None-literal case in join
    "module_choices": lambda a, b, va, vb: _join_module_choices(a, b),
    "user_function": _joined_user_function,
}


def _default_factory(f):
    return lambda: _default_of(f)


def _default_of(f) -> Any:
    if f.default is not f.default_factory:  # type: ignore[comparison-overlap]
        from dataclasses import MISSING

        if f.default is not MISSING:
            return f.default
        if f.default_factory is not MISSING:  # type: ignore[misc]
            return f.default_factory()  # type: ignore[misc]
    return None


_JOIN_FIELDS = tuple((f.name, _SPECIAL_JOINS.get(f.name), _default_factory(f)) for f in _FIELDS_OF_VALUE)


def any_true(*flags: Optional[bool]) -> Optional[bool]:
    """Tri-state OR: True if any is True; False only if all are False."""
    if any(f is True for f in flags):
        return True
    if all(f is False for f in flags):
        return False
    return None


@dataclass(frozen=True)
class CallerScope:
    """The size atoms the callers of a function have in scope where they call it (`d_model` of
    their `nn.Linear(d_model, n_head * d_k)`): a size a caller passes down (`temperature=d_model
    ** 0.5`) is still that size in the callee, which sees no layer of the caller's."""

    size_atoms: frozenset = frozenset()
    layer_inputs: frozenset = frozenset()
    # The numbers the callers' own callers gave their sizes (atom key, number): `Head(n_embd //
    # n_head)` inside a `Block(64, 4)` sizes its head 16, however far down the chain it is built.
    size_examples: Tuple[Tuple[str, Any], ...] = ()

    def __or__(self, other: "CallerScope") -> "CallerScope":
        examples = dict(other.size_examples)
        examples.update(self.size_examples)
        return CallerScope(
            self.size_atoms | other.size_atoms,
            self.layer_inputs | other.layer_inputs,
            tuple(sorted(examples.items())),
        )
