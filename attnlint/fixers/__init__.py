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
