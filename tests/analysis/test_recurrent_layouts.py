"""Recurrent layers and packed sequences (analysis.recurrent): time-major unless built or told
`batch_first=True`; hidden_size features per direction; unbatched or packed input leaves the
layout to what the code does next (pad_packed_sequence says it)."""

from __future__ import annotations

from helpers import analyse, env


def roles(value):
    return tuple(axis.role for axis in value.shape)


def sizes(value):
    return tuple(axis.size.text() if axis.size is not None else None for axis in value.shape)


def test_a_gru_is_time_major_by_default_and_bidirectional_doubles_its_features():
    analysis, _ = analyse(
        """
        import torch.nn as nn

        class Encoder(nn.Module):
            def __init__(self, d, hidden):
                super().__init__()
                self.gru = nn.GRU(d, hidden, bidirectional=True)

            def forward(self, x):
                s, b, _ = x.shape
                out, h = self.gru(x)
                return out
        """
    )
    out = env(analysis, "forward", "out")
    assert roles(out) == ("tokens", "batch", "feature")
    assert sizes(out) == ("s", "b", "2 * hidden")


def test_a_batch_first_lstm_keeps_the_batch_first_and_returns_its_state_pair():
    analysis, _ = analyse(
        """
        import torch.nn as nn

        class Encoder(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.lstm = nn.LSTM(input_size=d, hidden_size=d, batch_first=True)

            def forward(self, x):
                b, n, _ = x.shape
                out, (h, c) = self.lstm(x)
                return out
        """
    )
    assert roles(env(analysis, "forward", "out")) == ("batch", "tokens", "feature")
    assert roles(env(analysis, "forward", "h"))[1:] == ("batch", "feature")


def test_an_input_of_unknown_rank_leaves_the_output_unknown():
    # An unbatched (seq, features) input gives a 2-D output: `.T` of it is no batched transpose.
    analysis, _ = analyse(
        """
        import torch.nn as nn

        class Encoder(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.gru = nn.GRU(d, d)

            def forward(self, x):
                out, h = self.gru(x)
                return out
        """
    )
    assert env(analysis, "forward", "out").rank is None


def test_pad_packed_sequence_is_time_major_unless_told_batch_first():
    analysis, _ = analyse(
        """
        import torch.nn as nn
        from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

        class Encoder(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.gru = nn.GRU(d, d, batch_first=True)

            def forward(self, x, lengths):
                packed = pack_padded_sequence(x, lengths, batch_first=True)
                out, h = self.gru(packed)
                time_major, _ = pad_packed_sequence(out)
                batch_major, _ = pad_packed_sequence(out, batch_first=True)
                return time_major, batch_major
        """
    )
    assert roles(env(analysis, "forward", "time_major")) == ("tokens", "batch", "feature")
    assert roles(env(analysis, "forward", "batch_major")) == ("batch", "tokens", "feature")


def test_legacy_constructors_take_sizes_or_data():
    analysis, _ = analyse(
        """
        import torch

        def f(hidden_size):
            v = torch.FloatTensor(hidden_size).uniform_(-0.1, 0.1)
            data = torch.Tensor([0.5, 0.5])
            return v, data
        """
    )
    assert env(analysis, "f", "v").rank == 1
    assert env(analysis, "f", "data").rank == 1  # one axis of data, not a size of 0.5


def test_t_of_weights_of_unknown_rank_is_no_escape():
    analysis, _ = analyse(
        """
        import torch

        def f(energies):
            w = torch.softmax(energies, dim=0)
            return w.t().unsqueeze(1)
        """
    )
    (site,) = analysis.softmax_sites
    assert not site.renormalized
