# Transcribed from shared/seeds/000_b05986adebd5e7a1.txt (course notes, "attention from scratch"):
# the code as people write it, demo statements included. `SelfAttentionV1` has the ATN103 bug:
# `queries @ keys.T` while x is (batch, num_tokens, d_in).
import torch
import torch.nn as nn

# 模拟输入: 3个token, 每个6维
inputs = torch.tensor(
    [
        [0.43, 0.15, 0.89, 0.34, 0.66, 0.12],  # Token A
        [0.55, 0.87, 0.66, 0.55, 0.12, 0.44],  # Token B
        [0.78, 0.23, 0.11, 0.94, 0.33, 0.22],  # Token C
    ]
)

attn_scores = inputs @ inputs.T  # (3,3)
print("注意力分数:")
print(attn_scores)


class SelfAttentionV1(nn.Module):
    """带可训练权重的自注意力 (原始版)"""

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
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return attn_weights @ values


class SelfAttentionV2(nn.Module):
    """使用 nn.Linear 的更规范版本"""

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_q = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_k = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_v = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        queries = self.W_q(x)
        keys = self.W_k(x)
        values = self.W_v(x)

        attn_scores = queries @ keys.transpose(-2, -1)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return attn_weights @ values


# 测试
torch.manual_seed(42)
sa_v2 = SelfAttentionV2(d_in=6, d_out=6)
output = sa_v2(inputs.unsqueeze(0))  # (1, 3, 6)
print(f"输入: {inputs.shape} → 输出: {output.shape}")
