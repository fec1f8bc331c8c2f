"""Child-side helpers: turn source text into live modules, and build the original/fixed pair.

The original and the fixed code are loaded as two separate Python modules, each constructed right
after ``torch.manual_seed(seed)`` so both start from the same parameters, and then the fixed one is
given the original's weights with ``load_state_dict(strict=True)``: a code-only fix keeps every
parameter and buffer, so a strict load failing is itself evidence that the fix changed the model.
"""

from __future__ import annotations

import inspect
import sys
import types
from typing import Any, Dict, Mapping, Tuple

import torch
from torch import nn

# Values for constructor arguments the caller did not give, by the names tutorials use. Chosen so the
# entry works at the witness shapes: projection dims small (fast, and the cube witness batch = tokens
# = dim stays tiny) and not a perfect square (sqrt(d) a power of two would make `/ sqrt(d)` and
# `* (1/sqrt(d))` bit-identical and hide scale-placement differences), d_in different from d_out
# (catches code that confuses them), context long enough for every witness, dropout off, one head.
CONSTRUCTOR_DEFAULTS: Dict[str, Any] = {
    "d_in": 7,
    "in_dim": 7,
    "input_dim": 7,
    "in_features": 7,
    "d_out": 6,
    "out_dim": 6,
    "output_dim": 6,
    "out_features": 6,
    "d_model": 6,
    "embed_dim": 6,
    "dim": 6,
    "hidden_dim": 6,
    "hidden_size": 6,
    "d_k": 6,
    "head_dim": 6,
    "context_length": 16,
    "block_size": 16,
    "max_len": 16,
    "max_seq_len": 16,
    "seq_len": 16,
    "dropout": 0.0,
    "dropout_p": 0.0,
    "attn_dropout": 0.0,
    "num_heads": 1,
    "n_heads": 1,
    "n_head": 1,
}


def load_source(source: str, module_name: str) -> types.ModuleType:
    """Execute ``source`` as a fresh module registered under ``module_name``.

    Registered in ``sys.modules`` because dataclasses, pickling and ``typing.get_type_hints`` look
    the defining module up by name.
    """
    module = types.ModuleType(module_name)
    module.__file__ = f"<{module_name}>"
    sys.modules[module_name] = module
    code = compile(source, f"<{module_name}>", "exec")
    exec(code, module.__dict__)
    return module


def constructor_kwargs(cls: type, given: Mapping[str, Any]) -> Dict[str, Any]:
    """``given``, plus a default from :data:`CONSTRUCTOR_DEFAULTS` for each other required argument."""
    kwargs = dict(given)
    try:
        signature = inspect.signature(cls.__init__)
    except (TypeError, ValueError):
        return kwargs
    missing = []
    for name, param in list(signature.parameters.items())[1:]:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or name in kwargs:
            continue
        if param.default is not param.empty:
            continue
        if name in CONSTRUCTOR_DEFAULTS:
            kwargs[name] = CONSTRUCTOR_DEFAULTS[name]
        else:
            missing.append(name)
    if missing:
        raise TypeError(f"{cls.__name__}() needs {', '.join(missing)}: pass them in params['init_kwargs']")
    return kwargs


def build_pair(
    original_cls: type, fixed_cls: type, kwargs: Mapping[str, Any], seed: int
) -> Tuple[nn.Module, nn.Module]:
    """Both modules from the same seed, the fixed one loaded strictly with the original's weights."""
    torch.manual_seed(seed)
    original = original_cls(**kwargs)
    torch.manual_seed(seed)
    fixed = fixed_cls(**kwargs)
    fixed.load_state_dict(original.state_dict(), strict=True)
    # Evaluation mode: dropout off, so outputs are deterministic and comparable.
    original.eval()
    fixed.eval()
    return original, fixed
