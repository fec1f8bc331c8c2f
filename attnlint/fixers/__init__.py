"""Rewrites, one module per kind of change. Rules decide *whether* to fix; fixers build *how*.

A fixer returns a :class:`attnlint.rules.base.NodeFix`; the engine turns it into text edits,
applies non-overlapping ones, and refuses any result that does not parse.
"""
