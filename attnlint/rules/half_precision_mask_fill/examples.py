"""ATN206's examples: run as tests (tests/test_rule_examples.py); the flagged one is its page's."""

from attnlint.rules.base import Invalid, Valid

VALID = [
    # OpenNMT's attention: the scores are cast to float32 before the fill, and the weights back
    # to the queries' dtype after the softmax, so -1e18 meets float32 only.
    Valid(
        """
        import math
        import torch
        import torch.nn as nn


        class MultiHeadedAttention(nn.Module):
            def __init__(self, dim_per_head):
                super().__init__()
                self.dim_per_head = dim_per_head
                self.softmax = nn.Softmax(dim=-1)

            def forward(self, query, key, value, mask=None):
                query = query / math.sqrt(self.dim_per_head)
                scores = torch.matmul(query, key.transpose(2, 3))
                scores = scores.float()
                if mask is not None:
                    scores = scores.masked_fill(mask, -1e18)
                attn = self.softmax(scores).to(query.dtype)
                return torch.matmul(attn, value)
        """
    ),
    # +inf is a value of float16 too (a fill of proposals to be ignored): nothing overflows.
    Valid(
        """
        import torch


        def attend(q, k, v, pad):
            scores = (q @ k.transpose(-2, -1)).masked_fill(pad[:, None, None, :], float("inf"))
            return torch.softmax(-scores, dim=-1) @ v


        half = torch.randn(1, 2, 3, 4).half()
        out = attend(half, half, half, torch.zeros(1, 3, dtype=torch.bool))
        """
    ),
    # The same config field, set within float16's range where the config is made.
    Valid(
        """
        from dataclasses import dataclass
        import torch
        import torch.nn as nn


        @dataclass
        class Config:
            dim: int = 64
            mask_value: float = -1e9


        class Attn(nn.Module):
            def __init__(self, cfg: Config):
                super().__init__()
                self.cfg = cfg
                self.qk = nn.Linear(cfg.dim, 2 * cfg.dim)

            def forward(self, x, mask):
                q, k = self.qk(x).chunk(2, -1)
                s = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
                s = s.masked_fill(mask == 0, self.cfg.mask_value)
                return s.softmax(-1) @ x


        def train(model, x, mask):
            with torch.autocast("cuda", dtype=torch.float16):
                return model(x, mask)


        small = Config(mask_value=-1e4)
        """
    ),
    # A configuration that keeps fp16 off, and a dtype setting that names float32.
    Valid(
        """
        from dataclasses import dataclass

        import torch


        @dataclass
        class RunConfig:
            fp16: bool = False
            dtype: str = "float32"


        def attention(q, k, v, mask):
            scores = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
            scores = scores.masked_fill(mask == 0, -1e9)
            return torch.softmax(scores, dim=-1) @ v
        """
    ),
    # The classic float32 fill: nothing shows half precision.
    Valid(
        """
        import math
        import torch
        def attention(q, k, v, mask):
            scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
            scores = scores.masked_fill(mask == 0, -1e9)
            return torch.softmax(scores, dim=-1) @ v
        """
    ),
    # The scores' own dtype.
    Valid(
        """
        import torch
        def attention(q, k, v, mask, dtype):
            scores = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
            return scores.softmax(-1).to(dtype) @ v
        """
    ),
    # Within float16's range.
    Valid(
        """
        import torch
        def attention(q, k, v, mask):
            scores = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            scores = scores.masked_fill(mask, -1e4)
            return scores.softmax(-1).to(q.dtype) @ v
        """
    ),
    # -inf: ATN203's concern, not this rule's.
    Valid(
        """
        import torch
        model = None
        def attention(q, k, v, mask):
            scores = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            scores = scores.masked_fill(mask, float("-inf"))
            return scores.softmax(-1) @ v
        x = torch.randn(2, 3).half()
        """
    ),
    # The half-precision fill constant.
    Valid(
        """
        import torch
        def attention(q, k, v, mask):
            s = torch.einsum("bhid,bhjd->bhij", q, k) * q.shape[-1] ** -0.5
            s = s.masked_fill(mask, -65504.0)
            return s.softmax(-1).type_as(q) @ v
        """
    ),
    # Half precision elsewhere in the file, but this fill is in scores cast to float32 first.
    Valid(
        """
        import torch
        def attention(q, k, v, mask):
            s = (q.float() @ k.float().transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = s.masked_fill(mask, torch.finfo(s.dtype).min)
            return s.softmax(-1) @ v.float()
        model = torch.nn.Linear(4, 4).half()
        """
    ),
    # bf16 only: -1e9 fits bfloat16's range.
    Valid(
        """
        import torch
        def attention(q, k, v, mask):
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = s.masked_fill(mask, -1e9)
            return s.softmax(-1) @ v
        with torch.autocast("cpu", dtype=torch.bfloat16):
            pass
        """
    ),
    # A fill from a parameter: unknown.
    Valid(
        """
        import torch
        def attention(q, k, v, mask, mask_value):
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = s.masked_fill(mask, mask_value)
            return s.softmax(-1).to(q.dtype) @ v
        """
    ),
    # A large fill on something that is not scores (a padded target tensor).
    Valid(
        """
        import torch
        def prepare(labels, pad_mask):
            labels = labels.masked_fill(pad_mask, -1000000)
            return labels.to(torch.float16)
        """
    ),
    # Float32 module, float32 config: no evidence.
    Valid(
        """
        import torch
        import torch.nn as nn
        class Attention(nn.Module):
            def forward(self, q, k, v, mask):
                att = (q @ k.transpose(-2, -1)) * (1.0 / k.size(-1) ** 0.5)
                att = att.masked_fill(mask[:, :, : q.size(-2), : k.size(-2)] == 0, float("-1e10"))
                return att.softmax(dim=-1) @ v
        """
    ),
    # torch.where with the dtype's own min.
    Valid(
        """
        import torch
        def attention(q, k, v, keep):
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = torch.where(keep, s, torch.finfo(s.dtype).min)
            return s.softmax(-1).to(q.dtype) @ v
        """
    ),
    # An additive mask built in float32 (promotes the sum).
    Valid(
        """
        import torch
        def attention(q, k, v, keep):
            bias = torch.zeros(keep.shape).masked_fill(~keep, -1e9)
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5 + bias
            return s.softmax(-1).to(q.dtype) @ v
        """
    ),
    # A named constant within the range.
    Valid(
        """
        import torch
        NEG = -30000.0
        def attention(q, k, v, mask):
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = s.masked_fill(mask, NEG)
            return s.softmax(-1).half() @ v
        """
    ),
    # A module attribute that is the dtype's min.
    Valid(
        """
        import torch
        import torch.nn as nn
        class Attention(nn.Module):
            def __init__(self):
                super().__init__()
                self.dtype = torch.float16
            def forward(self, q, k, v, mask):
                s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
                s = s.masked_fill(mask, torch.finfo(s.dtype).min)
                return s.softmax(-1) @ v
        """
    ),
    # Fill of weights after the softmax, not of scores.
    Valid(
        """
        import torch
        def attention(q, k, v, mask):
            w = ((q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5).softmax(-1)
            w = w.masked_fill(mask, 0.0)
            return (w @ v).to(q.dtype)
        """
    ),
    # An additive mask made in float32 on purpose, for a half model: the sum is promoted.
    Valid(
        """
        import torch
        import torch.nn as nn


        class Block(nn.Module):
            def __init__(self, d=32):
                super().__init__()
                self.mha = nn.MultiheadAttention(d, 4, batch_first=True)

            def forward(self, x, future):
                bias = torch.zeros(future.shape, dtype=torch.float32).masked_fill(future, -1e9)
                return self.mha(x, x, x, attn_mask=bias.to(x.device))[0]


        block = Block().half()
        """
    ),
    # A float mask for nn.MultiheadAttention filled with its own dtype's min.
    Valid(
        """
        import torch
        import torch.nn as nn


        def encode(layer: nn.MultiheadAttention, x, blocked):
            additive = blocked.to(x.dtype)
            additive = additive.masked_fill(blocked, torch.finfo(additive.dtype).min)
            return layer(x, x, x, attn_mask=additive)[0]


        x = torch.randn(3, 2, 8).half()
        """
    ),
    # A large fill on a tensor no softmax normalises (a pairwise cost), in a half model's file.
    Valid(
        """
        import torch


        def costs(a, b, invalid):
            c = torch.cdist(a, b)
            c = c.masked_fill(invalid, 1e9)
            return c.min(dim=-1).values


        net = torch.nn.Linear(4, 4).half()
        """
    ),
    # Precision 32 for Lightning and a print precision: float32.
    Valid(
        """
        import torch


        def attention(q, k, v, keep):
            scores = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
            scores = scores.masked_fill(~keep, -1e9)
            return scores.softmax(-1) @ v


        def fit(lightning, model):
            torch.set_printoptions(precision=16)
            lightning.Trainer(precision=32).fit(model)
        """
    ),
    # The same hand-off with the fill in the mask's own dtype.
    Valid(
        """
        import torch
        import torch.nn as nn
        from fancy_attention import MultiheadAttention


        class EncoderLayer(nn.Module):
            def __init__(self, width, heads):
                super().__init__()
                self.attn = MultiheadAttention(width, heads)

            def forward(self, x, attn_mask):
                # The fill follows the mask's dtype: it fits in half precision.
                attn_mask = attn_mask.masked_fill(attn_mask.bool(), torch.finfo(attn_mask.dtype).min)
                return self.attn(query=x, key=x, value=x, attn_mask=attn_mask)


        class Encoder(nn.Module):
            def __init__(self, width, heads, depth, fp16):
                super().__init__()
                self.layers = nn.ModuleList([EncoderLayer(width, heads) for _ in range(depth)])
                if fp16:
                    self.half()

            def forward(self, x, blocked):
                for layer in self.layers:
                    x = layer(x, blocked.to(x.dtype))
                return x
        """
    ),
    # A float32 bias made here and handed off: the fill never meets half precision.
    Valid(
        """
        import torch
        import torch.nn as nn
        from fancy_attention import MultiheadAttention


        class EncoderLayer(nn.Module):
            def __init__(self, width, heads):
                super().__init__()
                self.attn = MultiheadAttention(width, heads)

            def forward(self, x, attn_mask):
                # A float32 bias made here: the fill never meets a half dtype, whatever the layer does.
                bias = torch.zeros(attn_mask.shape).masked_fill(attn_mask.bool(), -1e9)
                return self.attn(query=x, key=x, value=x, attn_mask=bias)


        class Encoder(nn.Module):
            def __init__(self, width, heads, depth):
                super().__init__()
                self.layers = nn.ModuleList([EncoderLayer(width, heads) for _ in range(depth)])
                self.half()

            def forward(self, x, blocked):
                for layer in self.layers:
                    x = layer(x, blocked)
                return x
        """
    ),
]

INVALID = [
    # The fill is in a helper the attention calls with its scores (it returns them filled).
    Invalid(
        """
        import torch
        import torch.nn as nn

        MASK_VALUE = -1e9


        def apply_key_mask(sim, mask, heads):
            if mask is None:
                return sim
            mask = mask.repeat_interleave(heads, dim=0)[:, None, :]
            return sim.masked_fill(~mask, MASK_VALUE)


        class CrossAttention(nn.Module):
            def __init__(self, dim, heads=8):
                super().__init__()
                self.heads = heads
                self.scale = (dim // heads) ** -0.5

            def forward(self, q, k, v, mask=None):
                sim = torch.einsum("b i d, b j d -> b i j", q, k) * self.scale
                sim = apply_key_mask(sim, mask, self.heads)
                return torch.einsum("b i j, b j d -> b i d", sim.softmax(dim=-1), v)


        unet = CrossAttention(64).half()
        """,
        fixed="""
        import torch
        import torch.nn as nn

        MASK_VALUE = -1e9


        def apply_key_mask(sim, mask, heads):
            if mask is None:
                return sim
            mask = mask.repeat_interleave(heads, dim=0)[:, None, :]
            return sim.masked_fill(~mask, torch.finfo(sim.dtype).min)


        class CrossAttention(nn.Module):
            def __init__(self, dim, heads=8):
                super().__init__()
                self.heads = heads
                self.scale = (dim // heads) ** -0.5

            def forward(self, q, k, v, mask=None):
                sim = torch.einsum("b i d, b j d -> b i j", q, k) * self.scale
                sim = apply_key_mask(sim, mask, self.heads)
                return torch.einsum("b i j, b j d -> b i d", sim.softmax(dim=-1), v)


        unet = CrossAttention(64).half()
        """,
        line=11,
    ),
    # A config field's default copied to an attribute of the same name (`self.mask_fill_value =
    # cfg.mask_fill_value`): still that number, beyond float16. The file binds `nn`, not
    # `torch`: no fix is offered (it would write `torch.finfo`, an unbound name).
    Invalid(
        """
        from dataclasses import dataclass

        import torch.nn as nn


        @dataclass
        class AttnConfig:
            heads: int = 8
            mask_fill_value: float = -1e9


        class CrossAttention(nn.Module):
            def __init__(self, cfg: AttnConfig):
                super().__init__()
                self.scale = 40 ** -0.5
                self.mask_fill_value = cfg.mask_fill_value

            def forward(self, q, k, v, mask):
                sim = q @ k.transpose(-2, -1) * self.scale
                sim.masked_fill_(~mask, self.mask_fill_value)
                return sim.softmax(dim=-1) @ v


        block = CrossAttention(AttnConfig()).half()
        """,
        line=20,
    ),
    # A model run in half precision.
    Invalid(
        """
        import torch
        def attention(q, k, v, mask):
            scores = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            scores = scores.masked_fill(mask == 0, -1e9)
            return scores.softmax(dim=-1) @ v
        model = torch.nn.Linear(64, 64).half()
        """,
        fixed="""
        import torch
        def attention(q, k, v, mask):
            scores = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            scores = scores.masked_fill(mask == 0, torch.finfo(scores.dtype).min)
            return scores.softmax(dim=-1) @ v
        model = torch.nn.Linear(64, 64).half()
        """,
        line=4,
        page=True,
    ),
    # Written for any dtype: it casts back to the input's dtype.
    Invalid(
        """
        import torch
        import torch.nn as nn
        def eager_attention_forward(module, query, key, value, attention_mask, scaling):
            attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
            attn_weights = attn_weights.masked_fill(attention_mask == 0, -1e9)
            attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
            return torch.matmul(attn_weights, value)
        """,
        fixed="""
        import torch
        import torch.nn as nn
        def eager_attention_forward(module, query, key, value, attention_mask, scaling):
            attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
            attn_weights = attn_weights.masked_fill(attention_mask == 0, torch.finfo(attn_weights.dtype).min)
            attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
            return torch.matmul(attn_weights, value)
        """,
    ),
    # A dtype parameter with float32's finfo.
    Invalid(
        """
        import torch
        def attention(q, k, v, keep, dtype=torch.float32):
            q, k, v = q.to(dtype), k.to(dtype), v.to(dtype)
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = s.masked_fill(~keep, torch.finfo(torch.float32).min)
            return s.softmax(-1) @ v
        """,
        fixed="""
        import torch
        def attention(q, k, v, keep, dtype=torch.float32):
            q, k, v = q.to(dtype), k.to(dtype), v.to(dtype)
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = s.masked_fill(~keep, torch.finfo(s.dtype).min)
            return s.softmax(-1) @ v
        """,
    ),
    # Under autocast (CUDA: float16).
    Invalid(
        """
        import torch
        import torch.nn as nn
        class Attention(nn.Module):
            def forward(self, x, mask):
                q, k, v = self.qkv(x).chunk(3, dim=-1)
                att = (q @ k.transpose(-2, -1)) * (1.0 / k.size(-1) ** 0.5)
                att = att.masked_fill(mask == 0, -1e20)
                return att.softmax(-1) @ v
        def train_step(model, x, mask):
            with torch.autocast("cuda"):
                return model(x, mask)
        """,
        fixed="""
        import torch
        import torch.nn as nn
        class Attention(nn.Module):
            def forward(self, x, mask):
                q, k, v = self.qkv(x).chunk(3, dim=-1)
                att = (q @ k.transpose(-2, -1)) * (1.0 / k.size(-1) ** 0.5)
                att = att.masked_fill(mask == 0, torch.finfo(att.dtype).min)
                return att.softmax(-1) @ v
        def train_step(model, x, mask):
            with torch.autocast("cuda"):
                return model(x, mask)
        """,
    ),
    # A named module constant.
    Invalid(
        """
        import torch
        NEG_INF = -1e9
        def attention(q, k, v, mask):
            s = torch.einsum("bhid,bhjd->bhij", q, k) * q.shape[-1] ** -0.5
            s = s.masked_fill(mask, NEG_INF)
            return s.softmax(-1).type_as(q) @ v
        """,
        fixed="""
        import torch
        NEG_INF = -1e9
        def attention(q, k, v, mask):
            s = torch.einsum("bhid,bhjd->bhij", q, k) * q.shape[-1] ** -0.5
            s = s.masked_fill(mask, torch.finfo(s.dtype).min)
            return s.softmax(-1).type_as(q) @ v
        """,
    ),
    # A module attribute set in __init__, and torch.float16 in the file.
    Invalid(
        """
        import torch
        import torch.nn as nn
        class Attention(nn.Module):
            def __init__(self):
                super().__init__()
                self.mask_value = -1e9
            def forward(self, q, k, v, mask):
                s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
                s = s.masked_fill(mask, self.mask_value)
                return s.softmax(-1) @ v
        def load(path):
            return torch.load(path).to(torch.float16)
        """,
        fixed="""
        import torch
        import torch.nn as nn
        class Attention(nn.Module):
            def __init__(self):
                super().__init__()
                self.mask_value = -1e9
            def forward(self, q, k, v, mask):
                s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
                s = s.masked_fill(mask, torch.finfo(s.dtype).min)
                return s.softmax(-1) @ v
        def load(path):
            return torch.load(path).to(torch.float16)
        """,
    ),
    # torch.where with a float32 min and a cast to the input's dtype: -inf in fp16.
    Invalid(
        """
        import torch
        def attention(q, k, v, keep):
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = torch.where(keep, s, torch.finfo(torch.float32).min)
            return s.softmax(-1).to(v.dtype) @ v
        """,
        fixed="""
        import torch
        def attention(q, k, v, keep):
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = torch.where(keep, s, torch.finfo(s.dtype).min)
            return s.softmax(-1).to(v.dtype) @ v
        """,
    ),
    # In-place fill in a module written for mixed precision.
    Invalid(
        """
        import torch
        import torch.nn as nn
        class SelfAttention(nn.Module):
            def forward(self, x, pad_mask):
                q, k, v = self.to_qkv(x).chunk(3, dim=-1)
                dots = torch.matmul(q, k.transpose(-1, -2)) * self.scale
                dots.masked_fill_(pad_mask, -1e10)
                attn = dots.softmax(dim=-1)
                return torch.matmul(attn, v).to(x.dtype)
        """,
        fixed="""
        import torch
        import torch.nn as nn
        class SelfAttention(nn.Module):
            def forward(self, x, pad_mask):
                q, k, v = self.to_qkv(x).chunk(3, dim=-1)
                dots = torch.matmul(q, k.transpose(-1, -2)) * self.scale
                dots.masked_fill_(pad_mask, torch.finfo(dots.dtype).min)
                attn = dots.softmax(dim=-1)
                return torch.matmul(attn, v).to(x.dtype)
        """,
    ),
    # float("-1e9") spelled as a string.
    Invalid(
        """
        import torch
        def attention(q, k, v, mask):
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = s.masked_fill(mask, float("-1e9"))
            return s.softmax(-1) @ v
        x = torch.zeros(1, dtype=torch.half)
        """,
        fixed="""
        import torch
        def attention(q, k, v, mask):
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = s.masked_fill(mask, torch.finfo(s.dtype).min)
            return s.softmax(-1) @ v
        x = torch.zeros(1, dtype=torch.half)
        """,
    ),
    # bfloat16 in the file and float32's min: beyond bfloat16's range too.
    Invalid(
        """
        import torch
        def attention(q, k, v, mask):
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = s.masked_fill(mask, torch.finfo(torch.float32).min)
            return s.softmax(-1) @ v
        model = torch.nn.Linear(8, 8).bfloat16()
        """,
        fixed="""
        import torch
        def attention(q, k, v, mask):
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = s.masked_fill(mask, torch.finfo(s.dtype).min)
            return s.softmax(-1) @ v
        model = torch.nn.Linear(8, 8).bfloat16()
        """,
    ),
    # A helper that builds in the input's dtype.
    Invalid(
        """
        import torch
        def attention(q, k, v, lengths):
            T = k.size(-2)
            keep = torch.arange(T, device=q.device)[None, :] < lengths[:, None]
            scale = torch.tensor(q.size(-1) ** -0.5, dtype=q.dtype)
            s = (q @ k.transpose(-2, -1)) * scale
            s = s.masked_fill(~keep[:, None, None, :], -1e9)
            return s.softmax(-1) @ v
        """,
        fixed="""
        import torch
        def attention(q, k, v, lengths):
            T = k.size(-2)
            keep = torch.arange(T, device=q.device)[None, :] < lengths[:, None]
            scale = torch.tensor(q.size(-1) ** -0.5, dtype=q.dtype)
            s = (q @ k.transpose(-2, -1)) * scale
            s = s.masked_fill(~keep[:, None, None, :], torch.finfo(s.dtype).min)
            return s.softmax(-1) @ v
        """,
    ),
    # The torch.masked_fill function.
    Invalid(
        """
        import torch
        def attention(q, k, v, mask, dtype):
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = torch.masked_fill(s, mask, -1e9)
            return s.softmax(-1).to(dtype) @ v
        """,
        fixed="""
        import torch
        def attention(q, k, v, mask, dtype):
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = torch.masked_fill(s, mask, torch.finfo(s.dtype).min)
            return s.softmax(-1).to(dtype) @ v
        """,
    ),
    # Config dataclass model, run with .half() in main.
    Invalid(
        """
        from dataclasses import dataclass
        import torch
        import torch.nn as nn
        @dataclass
        class Config:
            d_model: int = 64
            n_heads: int = 4
        class Attention(nn.Module):
            def __init__(self, cfg: Config):
                super().__init__()
                self.cfg = cfg
            def forward(self, q, k, v, mask):
                att = q @ k.transpose(-2, -1) / (q.size(-1) ** 0.5)
                att = att.masked_fill(mask == 0, -100000.0)
                return att.softmax(-1) @ v
        if __name__ == "__main__":
            m = Attention(Config()).half()
        """,
        fixed="""
        from dataclasses import dataclass
        import torch
        import torch.nn as nn
        @dataclass
        class Config:
            d_model: int = 64
            n_heads: int = 4
        class Attention(nn.Module):
            def __init__(self, cfg: Config):
                super().__init__()
                self.cfg = cfg
            def forward(self, q, k, v, mask):
                att = q @ k.transpose(-2, -1) / (q.size(-1) ** 0.5)
                att = att.masked_fill(mask == 0, torch.finfo(att.dtype).min)
                return att.softmax(-1) @ v
        if __name__ == "__main__":
            m = Attention(Config()).half()
        """,
    ),
    # A fill on scores that are not a plain name: reported, no fix.
    Invalid(
        """
        import torch
        def attention(q, k, v, mask):
            s = (q @ k.transpose(-2, -1)).masked_fill(mask, -1e9) * q.shape[-1] ** -0.5
            return s.softmax(-1).to(q.dtype) @ v
        """,
        fixed=None,
    ),
    # torch.tensor-wrapped constant.
    Invalid(
        """
        import torch
        def attention(q, k, v, mask):
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = torch.where(mask, torch.tensor(-1e9), s)
            return s.softmax(-1).type_as(v) @ v
        """,
        fixed="""
        import torch
        def attention(q, k, v, mask):
            s = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
            s = torch.where(mask, torch.finfo(s.dtype).min, s)
            return s.softmax(-1).type_as(v) @ v
        """,
    ),
    # A float attn_mask filled on its way to nn.MultiheadAttention, in a model run with `.half()`.
    Invalid(
        """
        import torch
        import torch.nn as nn


        class DecoderBlock(nn.Module):
            def __init__(self, width=64):
                super().__init__()
                self.attn = nn.MultiheadAttention(width, 8)

            def forward(self, x, blocked=None):
                if blocked is not None:
                    blocked = blocked.float().masked_fill(blocked.bool(), -1e9)
                return self.attn(x, x, x, attn_mask=blocked)[0]


        if __name__ == "__main__":
            block = DecoderBlock().half()
        """,
        line=12,
    ),
    # Additive (Bahdanau-style) energies, filled in place and normalised, under autocast.
    Invalid(
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F


        class AdditiveAttention(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.proj = nn.Linear(2 * dim, dim)
                self.v = nn.Linear(dim, 1, bias=False)

            def forward(self, hidden, encoder_outputs, src_mask):
                src_len = encoder_outputs.shape[1]
                hidden = hidden.unsqueeze(1).repeat(1, src_len, 1)
                energy = self.v(torch.tanh(self.proj(torch.cat((hidden, encoder_outputs), dim=2)))).squeeze(2)
                energy.masked_fill_(src_mask == 0, -1e10)
                return F.softmax(energy, dim=1)


        def train_step(model, batch):
            with torch.autocast("cuda"):
                return model(*batch)
        """,
        fixed="""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F


        class AdditiveAttention(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.proj = nn.Linear(2 * dim, dim)
                self.v = nn.Linear(dim, 1, bias=False)

            def forward(self, hidden, encoder_outputs, src_mask):
                src_len = encoder_outputs.shape[1]
                hidden = hidden.unsqueeze(1).repeat(1, src_len, 1)
                energy = self.v(torch.tanh(self.proj(torch.cat((hidden, encoder_outputs), dim=2)))).squeeze(2)
                energy.masked_fill_(src_mask == 0, torch.finfo(energy.dtype).min)
                return F.softmax(energy, dim=1)


        def train_step(model, batch):
            with torch.autocast("cuda"):
                return model(*batch)
        """,
        line=16,
    ),
    # An additive padding bias made in the queries' dtype and added to the scores.
    Invalid(
        """
        import torch


        def attend(q, k, v, pad):
            bias = torch.zeros(pad.shape, dtype=q.dtype, device=q.device).masked_fill(pad, -1e9)
            s = q @ k.transpose(-2, -1) * q.size(-1) ** -0.5
            return (s + bias[:, None, None, :]).softmax(-1) @ v
        """,
        line=5,
    ),
    # A training script with a --fp16 switch.
    Invalid(
        """
        import argparse

        import torch
        import torch.nn as nn


        class Attention(nn.Module):
            def forward(self, q, k, v, mask):
                att = torch.bmm(q, k.transpose(1, 2)) / q.size(-1) ** 0.5
                att = att.masked_fill(mask == 0, -1e9)
                return torch.bmm(att.softmax(dim=-1), v)


        def parse_args():
            parser = argparse.ArgumentParser()
            parser.add_argument("--fp16", action="store_true", help="train in half precision")
            return parser.parse_args()
        """,
        fixed="""
        import argparse

        import torch
        import torch.nn as nn


        class Attention(nn.Module):
            def forward(self, q, k, v, mask):
                att = torch.bmm(q, k.transpose(1, 2)) / q.size(-1) ** 0.5
                att = att.masked_fill(mask == 0, torch.finfo(att.dtype).min)
                return torch.bmm(att.softmax(dim=-1), v)


        def parse_args():
            parser = argparse.ArgumentParser()
            parser.add_argument("--fp16", action="store_true", help="train in half precision")
            return parser.parse_args()
        """,
        line=10,
    ),
    # Accelerate in fp16 mixed precision, torch.where with a float32-sized constant.
    Invalid(
        """
        import torch


        def attention(q, k, v, keep):
            scores = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
            scores = torch.where(keep, scores, -1e30)
            return scores.softmax(-1) @ v


        def prepare(model, optimizer, Accelerator):
            accelerator = Accelerator(mixed_precision="fp16")
            return accelerator.prepare(model, optimizer)
        """,
        fixed="""
        import torch


        def attention(q, k, v, keep):
            scores = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
            scores = torch.where(keep, scores, torch.finfo(scores.dtype).min)
            return scores.softmax(-1) @ v


        def prepare(model, optimizer, Accelerator):
            accelerator = Accelerator(mixed_precision="fp16")
            return accelerator.prepare(model, optimizer)
        """,
        line=6,
    ),
    # A training configuration (a dataclass field) switches the run to fp16.
    Invalid(
        """
        from dataclasses import dataclass

        import torch
        import torch.nn as nn


        @dataclass
        class TrainConfig:
            width: int = 256
            fp16: bool = True


        class Mixer(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.qk = nn.Linear(width, 2 * width)

            def forward(self, x, keep):
                q, k = self.qk(x).chunk(2, dim=-1)
                logits = torch.einsum("bid,bjd->bij", q, k) / q.shape[-1] ** 0.5
                logits = logits.masked_fill(~keep[:, None, :], -1e9)
                return logits.softmax(dim=-1) @ x
        """,
        fixed="""
        from dataclasses import dataclass

        import torch
        import torch.nn as nn


        @dataclass
        class TrainConfig:
            width: int = 256
            fp16: bool = True


        class Mixer(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.qk = nn.Linear(width, 2 * width)

            def forward(self, x, keep):
                q, k = self.qk(x).chunk(2, dim=-1)
                logits = torch.einsum("bid,bjd->bij", q, k) / q.shape[-1] ** 0.5
                logits = logits.masked_fill(~keep[:, None, :], torch.finfo(logits.dtype).min)
                return logits.softmax(dim=-1) @ x
        """,
        line=21,
    ),
    # A dtype written as a string in a command-line default.
    Invalid(
        """
        import argparse

        import torch


        def attend(q, k, v, pad):
            w = q @ k.transpose(-1, -2) * q.size(-1) ** -0.5
            w.masked_fill_(pad.unsqueeze(1), -1e10)
            return torch.softmax(w, -1) @ v


        def parse():
            parser = argparse.ArgumentParser()
            parser.add_argument("--dtype", default="fp16", choices=["fp32", "fp16"])
            return parser.parse_args()
        """,
        fixed="""
        import argparse

        import torch


        def attend(q, k, v, pad):
            w = q @ k.transpose(-1, -2) * q.size(-1) ** -0.5
            w.masked_fill_(pad.unsqueeze(1), torch.finfo(w.dtype).min)
            return torch.softmax(w, -1) @ v


        def parse():
            parser = argparse.ArgumentParser()
            parser.add_argument("--dtype", default="fp16", choices=["fp32", "fp16"])
            return parser.parse_args()
        """,
        line=8,
    ),
    # The fill is a config field's default, and the training step runs under autocast.
    Invalid(
        """
        from dataclasses import dataclass
        import torch
        import torch.nn as nn


        @dataclass
        class Config:
            dim: int = 64
            mask_value: float = -1e9


        class Attn(nn.Module):
            def __init__(self, cfg: Config):
                super().__init__()
                self.cfg = cfg
                self.qk = nn.Linear(cfg.dim, 2 * cfg.dim)

            def forward(self, x, mask):
                q, k = self.qk(x).chunk(2, -1)
                s = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
                s = s.masked_fill(mask == 0, self.cfg.mask_value)
                return s.softmax(-1) @ x


        def train(model, x, mask):
            with torch.autocast("cuda", dtype=torch.float16):
                return model(x, mask)
        """,
        fixed="""
        from dataclasses import dataclass
        import torch
        import torch.nn as nn


        @dataclass
        class Config:
            dim: int = 64
            mask_value: float = -1e9


        class Attn(nn.Module):
            def __init__(self, cfg: Config):
                super().__init__()
                self.cfg = cfg
                self.qk = nn.Linear(cfg.dim, 2 * cfg.dim)

            def forward(self, x, mask):
                q, k = self.qk(x).chunk(2, -1)
                s = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5
                s = s.masked_fill(mask == 0, torch.finfo(s.dtype).min)
                return s.softmax(-1) @ x


        def train(model, x, mask):
            with torch.autocast("cuda", dtype=torch.float16):
                return model(x, mask)
        """,
        line=21,
    ),
    # A mask filled on its way, under `attn_mask=`, to another library's attention layer, in a model the file casts to half.
    Invalid(
        """
        import torch
        import torch.nn as nn
        from fancy_attention import MultiheadAttention


        class EncoderLayer(nn.Module):
            def __init__(self, width, heads):
                super().__init__()
                self.attn = MultiheadAttention(width, heads)

            def forward(self, x, attn_mask):
                # True entries become a large negative bias, in the mask's own dtype.
                attn_mask = attn_mask.masked_fill(attn_mask.bool(), -1e9)
                return self.attn(query=x, key=x, value=x, attn_mask=attn_mask)


        class Encoder(nn.Module):
            def __init__(self, width, heads, depth, fp16):
                super().__init__()
                self.layers = nn.ModuleList([EncoderLayer(width, heads) for _ in range(depth)])
                if fp16:
                    self.half()

            def forward(self, x, blocked):
                for layer in self.layers:
                    x = layer(x, blocked.to(x.dtype))
                return x
        """,
        fixed="""
        import torch
        import torch.nn as nn
        from fancy_attention import MultiheadAttention


        class EncoderLayer(nn.Module):
            def __init__(self, width, heads):
                super().__init__()
                self.attn = MultiheadAttention(width, heads)

            def forward(self, x, attn_mask):
                # True entries become a large negative bias, in the mask's own dtype.
                attn_mask = attn_mask.masked_fill(attn_mask.bool(), torch.finfo(attn_mask.dtype).min)
                return self.attn(query=x, key=x, value=x, attn_mask=attn_mask)


        class Encoder(nn.Module):
            def __init__(self, width, heads, depth, fp16):
                super().__init__()
                self.layers = nn.ModuleList([EncoderLayer(width, heads) for _ in range(depth)])
                if fp16:
                    self.half()

            def forward(self, x, blocked):
                for layer in self.layers:
                    x = layer(x, blocked.to(x.dtype))
                return x
        """,
        line=13,
    ),
]
