"""ATN103 batched-transpose."""

from __future__ import annotations

from attnlint.diagnostics import Applicability
from attnlint.fixers.transpose import swap_last_two_axes
from attnlint.rules.base import FixAvailability, Invalid, Rule, RuleContext, Valid


class BatchedTranspose(Rule):
    """
    ## What it does
    Checks for `.T` on a batched (3-D or 4-D) tensor used in a matrix product, such as
    `queries @ keys.T` where `keys` is `(batch, tokens, d)`, for `.T` on batched attention
    scores or weights wherever it is used (`return out, probs.T`), and for `.T` of a batched
    tensor handed straight to a softmax (`sim.T.softmax(dim=-1)`).

    ## Why is this bad?
    `.T` reverses *every* axis: on a `(batch, tokens, d)` tensor it gives `(d, tokens, batch)`,
    not `(batch, d, tokens)`. The product then usually fails with a shape error, but when batch,
    tokens and d happen to be equal it runs and silently mixes batch elements together. PyTorch
    deprecated `.T` on tensors of more than two dimensions for this reason.

    The rule only fires when the analysis can show the tensor has three or more dimensions (from
    `b, n, d = x.shape` or `torch.bmm(a, x)`, also later in the body where every call runs it and x
    is bound once, `view`/`reshape`, a shape
    comment such as `# x: (batch, tokens, d)` or `# q: (b, m, d), key/value: (b, n, d)`, ...),
    also on one call only: a module its smoke test calls with a 2-D and with a 3-D tensor is
    reported for the 3-D call.
    `.T` on a 2-D weight or on unbatched activations is correct and is not reported.

    ## Fix safety
    The fix is safe: `x.transpose(-2, -1)` is the same view as `x.T` on 2-D input (bit for bit),
    so it cannot change code that was right; on batched input it swaps only the last two axes,
    which is what the product needs. `x.mT` is equivalent on PyTorch 1.11 and newer: set the
    option `replacement = "mT"` to get it instead.
    """

    code = "ATN103"
    name = "batched-transpose"
    summary = "`.T` on a batched tensor reverses every axis, not just the last two"
    fix_availability = FixAvailability.ALWAYS
    fix_applicability = Applicability.SAFE
    triggers = (r"\.T\b",)
    recipe = "batched_transpose"
    default_options = {"replacement": "transpose"}
    option_choices = {"replacement": ("transpose", "mT")}

    def check(self, ctx: RuleContext) -> None:
        # `.T` of a tensor handed straight to a softmax: attention scores, whatever made them
        # (`sim.T.softmax(dim=-1)`, the prototype-to-query direction of an affinity).
        softmaxed = {id(site.input_node) for site in ctx.analysis.softmax_sites if site.input_node is not None}
        for site in ctx.analysis.dot_t_sites:
            rank = site.receiver.rank
            if rank is None or rank < 3:
                continue
            if not (site.in_matmul or _attention_tensor(site.receiver) or id(site.node) in softmaxed):
                continue
            subject = ctx.code(site.node.value)
            spelling = ".mT" if self.options["replacement"] == "mT" else ".transpose(-2, -1)"
            ctx.report(
                site.node,
                f"`{subject}.T` reverses all {rank} axes of a batched tensor; "
                f"use `{spelling}` to swap only the last two",
                fix=swap_last_two_axes(site.node, self.options["replacement"]),
            )

    VALID = [
        # A 2-D alignment map (one sequence) transposed for plotting.
        Valid(
            """
            import torch
            import torch.nn.functional as F


            def alignment(decoder_states, encoder_states):
                t, d = decoder_states.shape
                scores = decoder_states @ encoder_states.transpose(-2, -1) * d ** -0.5
                probs = F.softmax(scores, dim=-1)
                # (source, target) for plotting: a 2-D map, where .T is the matrix transpose.
                return probs @ encoder_states, probs.T
            """
        ),
        # A module written for unbatched sequences, called only with 2-D tensors.
        Valid(
            """
            import torch
            import torch.nn as nn


            class TinyAttention(nn.Module):
                def __init__(self, d_in, d_out):
                    super().__init__()
                    self.to_q = nn.Linear(d_in, d_out)
                    self.to_k = nn.Linear(d_in, d_out)

                def forward(self, tokens):
                    queries, keys = self.to_q(tokens), self.to_k(tokens)
                    return torch.softmax(queries @ keys.T / keys.shape[-1] ** 0.5, dim=-1)


            if __name__ == "__main__":
                layer = TinyAttention(4, 8)
                print(layer(torch.rand(5, 4)).shape, layer(torch.rand(9, 4)).shape)
            """
        ),
        # Indexing one batch element first.
        Valid(
            """
            import torch
            def f(k, q):
                b, h, n, d = k.shape
                return q[0, 0] @ k[0, 0].T
            """
        ),
        # numpy-style `.T` on a parameter matrix in __init__ code.
        Valid(
            """
            import torch
            import torch.nn as nn
            class A(nn.Module):
                def __init__(self, d):
                    super().__init__()
                    w = torch.randn(d, d)
                    self.w = nn.Parameter(w @ w.T)
            """
        ),
        # A 2-D view of a batched tensor.
        Valid(
            """
            import torch
            def f(x):
                b, n, d = x.shape
                flat = x.reshape(b * n, d)
                return flat @ flat.T
            """
        ),
        # A 2-D weight from nn.Linear, transposed.
        Valid(
            """
            import torch.nn as nn
            class Tied(nn.Module):
                def __init__(self, d, vocab):
                    super().__init__()
                    self.emb = nn.Embedding(vocab, d)
                def forward(self, h):
                    b, n, d = h.shape
                    return h @ self.emb.weight.T
            """
        ),
        # `.T` on the 2-D result of a reduction.
        Valid(
            """
            import torch
            def f(x):
                b, n, d = x.shape
                pooled = x.mean(dim=1)
                return pooled @ pooled.T
            """
        ),
        # A shape comment describes one binding, not every later one.
        Valid(
            """
            def f(x):  # x: (batch, tokens, d)
                x = x.mean(1)
                return x @ x.T
            """
        ),
        # The seed notes' first example: 2-D inputs, `.T` is the matrix transpose.
        Valid(
            """
            import torch
            inputs = torch.tensor([[0.43, 0.15, 0.89], [0.55, 0.87, 0.66]])
            attn_scores = inputs @ inputs.T
            """
        ),
        # A 2-D weight transposed: a linear layer.
        Valid(
            """
            import torch.nn as nn
            class Head(nn.Module):
                def __init__(self, d):
                    super().__init__()
                    self.W = nn.Parameter(torch.randn(d, d))
                def forward(self, x):
                    b, n, d = x.shape
                    return x @ self.W.T
            """
        ),
        # `.T` on a 2-D slice of a batched tensor.
        Valid(
            """
            def first_scores(q, k):
                b, n, d = k.shape
                return q[0] @ k[0].T
            """
        ),
        # Rank unknown: stay silent.
        Valid(
            """
            def scores(q, k):
                return q @ k.T
            """
        ),
        # Batched, but written correctly.
        Valid(
            """
            def scores(q, k):
                b, n, d = k.shape
                return q @ k.transpose(-2, -1)
            """
        ),
        Valid(
            """
            def scores(q, k):
                b, h, n, d = k.shape
                return q @ k.mT
            """
        ),
        # `.T` on a batched tensor outside any product (e.g. to print it) is not this rule's.
        Valid(
            """
            def show(k):
                b, n, d = k.shape
                print(k.T.shape)
            """
        ),
        # Linear layer weights: `F.linear`-style code.
        Valid(
            """
            import torch
            def project(x, weight):
                return torch.matmul(x, weight.T)
            """
        ),
        Valid(
            """
            import torch
            x = torch.randn(4, 8)
            gram = x.T @ x
            """
        ),
        # The same helper called with 2-D matrices only.
        Valid(
            """
            import math
            import torch


            def attention(q, k, v):
                scores = (q @ k.T) / math.sqrt(q.size(-1))
                return scores.softmax(dim=-1) @ v


            def main():
                x = torch.randn(5, 8)
                return attention(x, x, x)
            """
        ),
        # The batched product runs on one branch only: the encoder states may be 2-D where `.T`
        # is used.
        Valid(
            """
            import torch
            import torch.nn as nn


            class Summariser(nn.Module):
                def __init__(self, width, hops):
                    super().__init__()
                    self.rnn = nn.GRU(width, width)
                    self.w_hops = nn.Parameter(torch.randn(hops, width))

                def forward(self, tokens):
                    states, _ = self.rnn(tokens)
                    attn = torch.softmax(self.w_hops @ states.T, dim=-1)
                    pooled = torch.bmm(attn, states) if states.dim() == 3 else attn @ states
                    return pooled
            """
        ),
        # The only statement that shows a 3-D input comes after an early return for 2-D input:
        # the product may have run on a 2-D x, where `.T` is right.
        Valid(
            """
            import torch
            import torch.nn as nn


            class Scorer(nn.Module):
                def __init__(self, width):
                    super().__init__()
                    self.to_q = nn.Linear(width, width)
                    self.to_k = nn.Linear(width, width)

                def forward(self, x):
                    scores = self.to_q(x) @ self.to_k(x).T
                    if x.dim() == 2:
                        return scores
                    batch, tokens, width = x.shape
                    return scores.reshape(batch, tokens, -1)
            """
        ),
        # One comment describes several tensors: the memory is one 2-D bank shared by the batch,
        # where `.T` is the matrix transpose.
        Valid(
            """
            import math
            import torch


            def read_memory(queries, memory):
                # queries: (B, Lq, d), memory: (slots, d)
                logits = queries @ memory.T / math.sqrt(memory.shape[-1])
                return torch.softmax(logits, dim=-1) @ memory
            """
        ),
    ]

    INVALID = [
        # Few-shot cross-attention between query and prototype feature maps: the reverse
        # direction's affinity is `sim.T` of a (pairs, hw, hw) tensor, softmaxed as is.
        Invalid(
            """
            import torch
            import torch.nn as nn
            from einops import rearrange


            class CrossAlign(nn.Module):
                def __init__(self, dim, key_dim=128):
                    super().__init__()
                    self.to_q = nn.Conv2d(dim, key_dim, 1, bias=False)
                    self.to_k = nn.Conv2d(dim, key_dim, 1, bias=False)
                    self.scale = key_dim ** -0.5

                def forward(self, query_maps, proto_maps):
                    qk = rearrange(self.to_q(query_maps), "q c h w -> q (h w) c")
                    pk = rearrange(self.to_k(proto_maps), "n c h w -> n (h w) c")
                    qv = rearrange(query_maps, "q c h w -> q (h w) c")
                    pv = rearrange(proto_maps, "n c h w -> n (h w) c")
                    sim = torch.einsum("bid,bjd->bij", qk, pk) * self.scale
                    q2p = sim.softmax(dim=-1)
                    p2q = sim.T.softmax(dim=-1)
                    return torch.bmm(q2p, pv), torch.bmm(p2q, qv)
            """,
            fixed="""
            import torch
            import torch.nn as nn
            from einops import rearrange


            class CrossAlign(nn.Module):
                def __init__(self, dim, key_dim=128):
                    super().__init__()
                    self.to_q = nn.Conv2d(dim, key_dim, 1, bias=False)
                    self.to_k = nn.Conv2d(dim, key_dim, 1, bias=False)
                    self.scale = key_dim ** -0.5

                def forward(self, query_maps, proto_maps):
                    qk = rearrange(self.to_q(query_maps), "q c h w -> q (h w) c")
                    pk = rearrange(self.to_k(proto_maps), "n c h w -> n (h w) c")
                    qv = rearrange(query_maps, "q c h w -> q (h w) c")
                    pv = rearrange(proto_maps, "n c h w -> n (h w) c")
                    sim = torch.einsum("bid,bjd->bij", qk, pk) * self.scale
                    q2p = sim.softmax(dim=-1)
                    p2q = sim.transpose(-2, -1).softmax(dim=-1)
                    return torch.bmm(q2p, pv), torch.bmm(p2q, qv)
            """,
        ),
        # Attention weights of shape (batch, heads, queries, keys) returned as `.T`: reversed to
        # (keys, queries, heads, batch), not transposed per head.
        Invalid(
            """
            import torch
            import torch.nn.functional as F


            def attend(q, k, v):
                b, h, n, d = q.shape
                scores = q @ k.transpose(-2, -1) * d ** -0.5
                probs = F.softmax(scores, dim=-1)
                return probs @ v, probs.T
            """,
            fixed="""
            import torch
            import torch.nn.functional as F


            def attend(q, k, v):
                b, h, n, d = q.shape
                scores = q @ k.transpose(-2, -1) * d ** -0.5
                probs = F.softmax(scores, dim=-1)
                return probs @ v, probs.transpose(-2, -1)
            """,
            line=9,
        ),
        # The same module also called with a batch: on that call `.T` reverses (batch, seq, d).
        Invalid(
            """
            import torch
            import torch.nn as nn


            class TinyAttention(nn.Module):
                def __init__(self, d_in, d_out):
                    super().__init__()
                    self.to_q = nn.Linear(d_in, d_out)
                    self.to_k = nn.Linear(d_in, d_out)

                def forward(self, tokens):
                    queries, keys = self.to_q(tokens), self.to_k(tokens)
                    return torch.softmax(queries @ keys.T / keys.shape[-1] ** 0.5, dim=-1)


            if __name__ == "__main__":
                layer = TinyAttention(4, 8)
                print(layer(torch.rand(5, 4)).shape, layer(torch.rand(3, 5, 4)).shape)
            """,
            fixed="""
            import torch
            import torch.nn as nn


            class TinyAttention(nn.Module):
                def __init__(self, d_in, d_out):
                    super().__init__()
                    self.to_q = nn.Linear(d_in, d_out)
                    self.to_k = nn.Linear(d_in, d_out)

                def forward(self, tokens):
                    queries, keys = self.to_q(tokens), self.to_k(tokens)
                    return torch.softmax(queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5, dim=-1)


            if __name__ == "__main__":
                layer = TinyAttention(4, 8)
                print(layer(torch.rand(5, 4)).shape, layer(torch.rand(3, 5, 4)).shape)
            """,
        ),
        # A comment giving the shape of several names.
        Invalid(
            """
            import torch

            def f(q, k, v):
                # q, k, v: (batch, heads, seq, dim)
                return q @ k.T
            """,
            fixed="""
            import torch

            def f(q, k, v):
                # q, k, v: (batch, heads, seq, dim)
                return q @ k.transpose(-2, -1)
            """,
        ),
        # Unsqueezed 2-D keys.
        Invalid(
            """
            def f(q, k2d):
                n, d = k2d.shape
                k = k2d.unsqueeze(0).expand(4, n, d)
                return q @ k.T
            """,
            fixed="""
            def f(q, k2d):
                n, d = k2d.shape
                k = k2d.unsqueeze(0).expand(4, n, d)
                return q @ k.transpose(-2, -1)
            """,
        ),
        # Inside torch.matmul with a method-call receiver.
        Invalid(
            """
            import torch
            def f(q, k):
                b, n, d = k.shape
                return torch.matmul(q, k.float().T)
            """,
            fixed="""
            import torch
            def f(q, k):
                b, n, d = k.shape
                return torch.matmul(q, k.float().transpose(-2, -1))
            """,
            page=True,
        ),
        # A 3-D constructor in a script.
        Invalid(
            """
            import torch
            keys = torch.rand(4, 5, 8)
            queries = torch.rand(4, 5, 8)
            scores = queries @ keys.T
            """,
            fixed="""
            import torch
            keys = torch.rand(4, 5, 8)
            queries = torch.rand(4, 5, 8)
            scores = queries @ keys.transpose(-2, -1)
            """,
        ),
        # `.T` after a permute that keeps the rank.
        Invalid(
            """
            def f(x):
                b, n, d = x.shape
                k = x.permute(0, 2, 1)
                return x @ k.T
            """,
            fixed="""
            def f(x):
                b, n, d = x.shape
                k = x.permute(0, 2, 1)
                return x @ k.transpose(-2, -1)
            """,
        ),
        # einsum-free batched matmul with a view into heads.
        Invalid(
            """
            import torch
            def f(x, n_heads):
                B, T, C = x.shape
                k = x.view(B, T, n_heads, C // n_heads)
                q = x.view(B, T, n_heads, C // n_heads)
                return q @ k.T
            """,
            fixed="""
            import torch
            def f(x, n_heads):
                B, T, C = x.shape
                k = x.view(B, T, n_heads, C // n_heads)
                q = x.view(B, T, n_heads, C // n_heads)
                return q @ k.transpose(-2, -1)
            """,
        ),
        # bmm takes 3-D operands: `K.T` there is batched.
        Invalid(
            """
            import torch


            def f(Q, K, V):
                s = torch.bmm(Q, K.T) / Q.shape[-1] ** 0.5
                return torch.bmm(s.softmax(-1), V)
            """,
            fixed="""
            import torch


            def f(Q, K, V):
                s = torch.bmm(Q, K.transpose(-2, -1)) / Q.shape[-1] ** 0.5
                return torch.bmm(s.softmax(-1), V)
            """,
        ),
        # The seed notes' SelfAttentionV1: the shape is written in a comment.
        Invalid(
            """
            import torch
            import torch.nn as nn

            class SelfAttentionV1(nn.Module):
                def __init__(self, d_in, d_out):
                    super().__init__()
                    self.W_q = nn.Parameter(torch.randn(d_in, d_out))
                    self.W_k = nn.Parameter(torch.randn(d_in, d_out))
                    self.W_v = nn.Parameter(torch.randn(d_in, d_out))

                def forward(self, x):
                    # x: (batch, num_tokens, d_in)
                    queries = x @ self.W_q
                    keys = x @ self.W_k
                    values = x @ self.W_v
                    attn_scores = queries @ keys.T  # (num_tokens, num_tokens)
                    attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
                    return attn_weights @ values
            """,
            fixed="""
            import torch
            import torch.nn as nn

            class SelfAttentionV1(nn.Module):
                def __init__(self, d_in, d_out):
                    super().__init__()
                    self.W_q = nn.Parameter(torch.randn(d_in, d_out))
                    self.W_k = nn.Parameter(torch.randn(d_in, d_out))
                    self.W_v = nn.Parameter(torch.randn(d_in, d_out))

                def forward(self, x):
                    # x: (batch, num_tokens, d_in)
                    queries = x @ self.W_q
                    keys = x @ self.W_k
                    values = x @ self.W_v
                    attn_scores = queries @ keys.transpose(-2, -1)  # (num_tokens, num_tokens)
                    attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
                    return attn_weights @ values
            """,
            line=16,
            column=32,
        ),
        # Rank from unpacking the shape.
        Invalid(
            """
            def attention(q, k, v):
                b, n, d = k.shape
                scores = q @ k.T / d ** 0.5
                return scores.softmax(-1) @ v
            """,
            fixed="""
            def attention(q, k, v):
                b, n, d = k.shape
                scores = q @ k.transpose(-2, -1) / d ** 0.5
                return scores.softmax(-1) @ v
            """,
            line=3,
            column=17,
        ),
        # Rank from `view` into heads, through `torch.matmul`.
        Invalid(
            """
            import torch
            def forward(self, x):
                B, T, C = x.size()
                k = self.key(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                q = self.query(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                att = torch.matmul(q, k.T)
                return att
            """,
            fixed="""
            import torch
            def forward(self, x):
                B, T, C = x.size()
                k = self.key(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                q = self.query(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                att = torch.matmul(q, k.transpose(-2, -1))
                return att
            """,
        ),
        # A jaxtyping annotation gives the rank.
        Invalid(
            """
            from jaxtyping import Float
            from torch import Tensor
            def scores(q: Float[Tensor, "b n d"], k: Float[Tensor, "b n d"]):
                return q @ k.T
            """,
            fixed="""
            from jaxtyping import Float
            from torch import Tensor
            def scores(q: Float[Tensor, "b n d"], k: Float[Tensor, "b n d"]):
                return q @ k.transpose(-2, -1)
            """,
        ),
        # torch.bmm with a batch built by unsqueeze.
        Invalid(
            """
            import torch
            def batched(q2d, k2d):
                n, d = k2d.shape
                q = q2d.unsqueeze(0)
                k = k2d.unsqueeze(0)
                return torch.bmm(q, k.T)
            """,
            fixed="""
            import torch
            def batched(q2d, k2d):
                n, d = k2d.shape
                q = q2d.unsqueeze(0)
                k = k2d.unsqueeze(0)
                return torch.bmm(q, k.transpose(-2, -1))
            """,
        ),
        # Method form `q.matmul(k.T)`, 4-D from a constructor.
        Invalid(
            """
            import torch
            q = torch.randn(2, 4, 16, 32)
            k = torch.randn(2, 4, 16, 32)
            scores = q.matmul(k.T)
            """,
            fixed="""
            import torch
            q = torch.randn(2, 4, 16, 32)
            k = torch.randn(2, 4, 16, 32)
            scores = q.matmul(k.transpose(-2, -1))
            """,
        ),
        # A trailing shape comment on the assignment.
        Invalid(
            """
            def forward(self, x):
                keys = self.W_k(x)  # (b, n, d_out)
                queries = self.W_q(x)
                return queries @ keys.T
            """,
            fixed="""
            def forward(self, x):
                keys = self.W_k(x)  # (b, n, d_out)
                queries = self.W_q(x)
                return queries @ keys.transpose(-2, -1)
            """,
        ),
        # The `replacement = "mT"` option.
        Invalid(
            """
            def scores(q, k):
                b, h, n, d = k.shape
                return q @ k.T
            """,
            fixed="""
            def scores(q, k):
                b, h, n, d = k.shape
                return q @ k.mT
            """,
            options={"replacement": "mT"},
        ),
        # Parenthesised operand.
        Invalid(
            """
            def scores(x):
                b, n, d = x.shape
                return x @ (x * 0.5).T
            """,
            fixed="""
            def scores(x):
                b, n, d = x.shape
                return x @ (x * 0.5).transpose(-2, -1)
            """,
        ),
        # A course notebook at module level: a stacked batch of three sequences.
        Invalid(
            """
            import torch

            inputs = torch.tensor([[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64]])
            batch = torch.stack((inputs, inputs.flip(0)), dim=0)
            W_query = torch.nn.Parameter(torch.rand(3, 2), requires_grad=False)
            W_key = torch.nn.Parameter(torch.rand(3, 2), requires_grad=False)
            queries = batch @ W_query
            keys = batch @ W_key
            attn_scores = queries @ keys.T
            """,
            fixed="""
            import torch

            inputs = torch.tensor([[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64]])
            batch = torch.stack((inputs, inputs.flip(0)), dim=0)
            W_query = torch.nn.Parameter(torch.rand(3, 2), requires_grad=False)
            W_key = torch.nn.Parameter(torch.rand(3, 2), requires_grad=False)
            queries = batch @ W_query
            keys = batch @ W_key
            attn_scores = queries @ keys.transpose(-2, -1)
            """,
        ),
        # A helper the module calls with 4-D heads.
        Invalid(
            """
            import math
            import torch
            import torch.nn as nn


            def attention(q, k, v):
                scores = (q @ k.T) / math.sqrt(q.size(-1))
                return scores.softmax(dim=-1) @ v


            class MultiHead(nn.Module):
                def __init__(self, d_model, heads):
                    super().__init__()
                    self.h = heads
                    self.d_k = d_model // heads
                    self.qkv = nn.Linear(d_model, 3 * d_model)

                def forward(self, x):
                    bs = x.size(0)
                    q, k, v = self.qkv(x).chunk(3, dim=-1)
                    q, k, v = [t.view(bs, -1, self.h, self.d_k).transpose(1, 2) for t in (q, k, v)]
                    return attention(q, k, v)
            """,
            fixed="""
            import math
            import torch
            import torch.nn as nn


            def attention(q, k, v):
                scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
                return scores.softmax(dim=-1) @ v


            class MultiHead(nn.Module):
                def __init__(self, d_model, heads):
                    super().__init__()
                    self.h = heads
                    self.d_k = d_model // heads
                    self.qkv = nn.Linear(d_model, 3 * d_model)

                def forward(self, x):
                    bs = x.size(0)
                    q, k, v = self.qkv(x).chunk(3, dim=-1)
                    q, k, v = [t.view(bs, -1, self.h, self.d_k).transpose(1, 2) for t in (q, k, v)]
                    return attention(q, k, v)
            """,
        ),
        # A recurrent layer's output (bound once) that a later `torch.bmm` takes: it is 3-D, so
        # `.T` on it reverses the batch axis into the features.
        Invalid(
            """
            import torch
            import torch.nn as nn


            class Summariser(nn.Module):
                def __init__(self, width, hops):
                    super().__init__()
                    self.rnn = nn.GRU(width, width, batch_first=True)
                    self.w_hops = nn.Parameter(torch.randn(hops, width))

                def forward(self, tokens):
                    states, _ = self.rnn(tokens)
                    attn = torch.softmax(torch.matmul(self.w_hops, states.T), dim=-1)
                    pooled = torch.bmm(attn, states)
                    return pooled.flatten(1)
            """,
            fixed="""
            import torch
            import torch.nn as nn


            class Summariser(nn.Module):
                def __init__(self, width, hops):
                    super().__init__()
                    self.rnn = nn.GRU(width, width, batch_first=True)
                    self.w_hops = nn.Parameter(torch.randn(hops, width))

                def forward(self, tokens):
                    states, _ = self.rnn(tokens)
                    attn = torch.softmax(torch.matmul(self.w_hops, states.transpose(-2, -1)), dim=-1)
                    pooled = torch.bmm(attn, states)
                    return pooled.flatten(1)
            """,
        ),
        # The rank shows after the product: `b, n, d = x.shape` runs on every call that returns,
        # so x (one value for the whole call) was 3-D at the product already.
        Invalid(
            """
            import torch
            import torch.nn as nn


            class Attend(nn.Module):
                def __init__(self, width):
                    super().__init__()
                    self.to_q = nn.Linear(width, width)
                    self.to_k = nn.Linear(width, width)
                    self.to_v = nn.Linear(width, width)

                def forward(self, x):
                    q, k, v = self.to_q(x), self.to_k(x), self.to_v(x)
                    attn = torch.softmax(q @ k.T * k.shape[-1] ** -0.5, dim=-1)
                    b, n, d = x.shape
                    return (attn @ v).reshape(b, n, d)
            """,
            fixed="""
            import torch
            import torch.nn as nn


            class Attend(nn.Module):
                def __init__(self, width):
                    super().__init__()
                    self.to_q = nn.Linear(width, width)
                    self.to_k = nn.Linear(width, width)
                    self.to_v = nn.Linear(width, width)

                def forward(self, x):
                    q, k, v = self.to_q(x), self.to_k(x), self.to_v(x)
                    attn = torch.softmax(q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5, dim=-1)
                    b, n, d = x.shape
                    return (attn @ v).reshape(b, n, d)
            """,
        ),
        # One comment describes several tensors (`key/value` share a shape): the keys are batched.
        Invalid(
            """
            import math
            import torch


            def read(query, key, value):
                # query: (B, Lq, d), key/value: (B, Lk, d)
                logits = torch.matmul(query, key.T) / math.sqrt(query.shape[-1])
                return torch.softmax(logits, dim=-1) @ value
            """,
            fixed="""
            import math
            import torch


            def read(query, key, value):
                # query: (B, Lq, d), key/value: (B, Lk, d)
                logits = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(query.shape[-1])
                return torch.softmax(logits, dim=-1) @ value
            """,
        ),
    ]


def _attention_tensor(value) -> bool:
    """Attention scores or weights (a Q·Kᵀ product, a softmax of one): torch tensors whose
    axes are (batch, [heads,] queries, keys); `.T` of them is never the transpose of a matrix."""
    from attnlint.analysis.values import SCORES, WEIGHTS

    return value.scores is not None or (value.softmax is not None and value.role == WEIGHTS) or value.role == SCORES
