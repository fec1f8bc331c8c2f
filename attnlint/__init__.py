"""attnlint: static analysis and autofix for PyTorch attention code.

Importing attnlint (or running `attnlint check`) never imports torch; only `attnlint.verify`
does, and only when a verification runs. Importing the package does not import LibCST either:
`check_source` and `fix_source` load the engine on first use, so that a run answered from the
cache never loads the parser.
"""

__version__ = "0.1.0"

__all__ = ["__version__", "check_source", "fix_source"]


def __getattr__(name: str):
    if name in ("check_source", "fix_source"):
        from attnlint import engine

        return getattr(engine, name)
    raise AttributeError(f"module 'attnlint' has no attribute {name!r}")
