"""attnlint: static analysis and autofix for PyTorch attention code.

Importing attnlint (or running `attnlint check`) never imports torch; only `attnlint.verify`
does, and only when a verification runs.
"""

__version__ = "0.1.0"

from attnlint.engine import check_source, fix_source  # noqa: E402

__all__ = ["__version__", "check_source", "fix_source"]
