"""Self-attention with trainable weights, as first written in the course notes (chapter 3.4).

`keys.T` is meant as "transpose the keys", but `keys` is (batch, num_tokens, d_out): `.T`
reverses all three axes. attnlint reports it as ATN103 and `attnlint --fix` rewrites it.
"""

import torch
import torch.nn as nn


class SelfAttentionV1(nn.Module):
    """Self-attention with trainable weights (the original version)."""

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


if __name__ == "__main__":
    inputs = torch.tensor(
        [
            [0.43, 0.15, 0.89, 0.34, 0.66, 0.12],
            [0.55, 0.87, 0.66, 0.55, 0.12, 0.44],
            [0.78, 0.23, 0.11, 0.94, 0.33, 0.22],
        ]
    )
    torch.manual_seed(42)
    sa_v1 = SelfAttentionV1(d_in=6, d_out=6)
    print(sa_v1(inputs.unsqueeze(0)).shape)
