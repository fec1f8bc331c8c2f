"""Statement extents and enclosing definitions (what --diff-base and SARIF fingerprints use)."""

from __future__ import annotations

from attnlint.statements import StatementIndex

SOURCE = '''\
import torch


@decorator
class Attention:
    def forward(self, q, k):
        w = torch.softmax(
            q @ k.T,
            dim=1,
        )
        if w.any(): y = w
        for row in torch.softmax(q,
                                 dim=0):
            pass
        return w
'''


def test_multi_line_statement():
    index = StatementIndex(SOURCE)
    # A finding on line 8 (inside the call) belongs to the statement on lines 7-10.
    assert index.statement_lines(8, 8) == (7, 10)
    assert index.statement_text(9, 9) == "w = torch.softmax( q @ k.T, dim=1, )"
    assert index.scope(8, 8) == "Attention.forward"


def test_compound_statement_headers_are_their_own_statements():
    index = StatementIndex(SOURCE)
    assert index.statement_lines(12, 12) == (12, 13)  # the `for` header spans two lines
    assert index.statement_lines(14, 14) == (14, 14)  # its body is separate
    assert index.statement_lines(11, 11) == (11, 11)  # `if x: y = w` on one line
    assert index.statement_lines(4, 4) == (4, 5)  # a decorator belongs to its class header
    assert index.scope(5, 5) == ""
    assert index.scope(6, 6) == "Attention"


def test_module_level_and_unparsable_files():
    assert StatementIndex(SOURCE).scope(1, 1) == ""
    broken = StatementIndex("def f(:\n    x = 1\n")
    assert broken.statement_lines(2, 2) == (2, 2)
    assert broken.scope(2, 2) == ""
