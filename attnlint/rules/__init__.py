"""Detection rules, one module per rule. See :mod:`attnlint.rules.base` for what a rule is."""
