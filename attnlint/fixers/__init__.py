"""Rewrites, one module per kind of change. Rules decide *whether* to fix; fixers build *how*.

A fixer returns a :class:`attnlint.rules.base.NodeFix`; the engine turns it into text edits,
applies non-overlapping ones, and refuses any result that does not parse.
"""

import libcst as cst


def bare_code(module: cst.Module, node: cst.CSTNode) -> str:
    """A node's code without its own parentheses.

    A replacement covers the node's span, which excludes its parentheses: they stay in the file
    around whatever is put there, so repeating them would double them.
    """
    if getattr(node, "lpar", None):
        node = node.with_changes(lpar=[], rpar=[])
    return module.code_for_node(node)


# Nodes whose body runs at another time or in another scope than the statement around them: a
# line inserted before the statement would not see their names (`s` of `for s in scores`).
_OWN_SCOPES = (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.FunctionDef, cst.ClassDef)


def statement_taking_a_line_before(analysis, node: cst.CSTNode):
    """The statement line around `node` before which a fix can insert a line, or None.

    Only a line of its own (`x = ...` in a block, not `if c: x = ...` nor `a = 1; x = ...`), and
    only when `node` is evaluated there, not inside a lambda or comprehension of its own.
    """
    current = analysis.parent_of(node)
    while current is not None:
        if isinstance(current, _OWN_SCOPES):
            return None
        if isinstance(current, cst.SimpleStatementLine):
            return current if len(current.body) == 1 else None
        if isinstance(current, (cst.BaseCompoundStatement, cst.SimpleStatementSuite)):
            return None  # a header (`if self.mask...:`) or a one-line suite
        current = analysis.parent_of(current)
    return None
