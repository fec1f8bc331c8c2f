"""Child-side helpers: turn source text into live modules, and build the original/fixed pair.

The original and the fixed code are loaded as two separate Python modules, each constructed right
after ``torch.manual_seed(seed)`` so both start from the same parameters, and then the fixed one is
given the original's weights with ``load_state_dict(strict=True)``: a code-only fix keeps every
parameter and buffer, so a strict load failing is itself evidence that the fix changed the model.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
import types
import typing
from typing import Any, Dict, Mapping, Optional, Tuple

import torch
from torch import nn

# The names tutorials give a model width and a head count (the width must split into the heads).
MODEL_WIDTH_NAMES = ("d_model", "embed_dim", "dim", "hidden_dim", "hidden_size", "n_embd", "emb_dim", "embedding_dim")
HEAD_COUNT_NAMES = ("num_heads", "n_heads", "n_head", "heads", "num_attention_heads")

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
    "max_position_embeddings": 16,
    "drop_rate": 0.0,
    "attention_dropout": 0.0,
    "attention_probs_dropout_prob": 0.0,
    "resid_dropout": 0.0,
    "vocab_size": 11,
    "pad_id": 0,
    "pad_token_id": 0,
    "n_layer": 1,
    "n_layers": 1,
    "num_layers": 1,
    "qkv_bias": False,
    **{name: 6 for name in MODEL_WIDTH_NAMES},
    **{name: 1 for name in HEAD_COUNT_NAMES},
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


class CannotBuild(TypeError):
    """The entry's constructor needs something the verifier cannot make up; the message says what."""


# Parameter names that hold a configuration object when they carry no usable annotation.
CONFIG_PARAM_NAMES = ("config", "cfg", "conf", "args", "hparams", "hp", "params", "opt", "opts", "settings")


class ConfigNamespace(types.SimpleNamespace):
    """A stand-in configuration object: attribute access (``cfg.d_model``), mapping access
    (``cfg["emb_dim"]``, ``cfg.get("qkv_bias", False)``) and ``in``, like the configs tutorials use."""

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)

    def __contains__(self, key: str) -> bool:
        return hasattr(self, key)

    def __getattr__(self, key: str) -> Any:
        # Only reached for names not set: a clear error naming what to pass.
        raise AttributeError(
            f"the configuration has no {key!r}: give it with --init '{{\"{key}\": ...}}' or [tool.attnlint.verify] init"
        )


def _default_for(name: str, given: Mapping[str, Any], usual: Mapping[str, Any] = CONSTRUCTOR_DEFAULTS) -> Any:
    if name in given:
        return given[name]
    if name in usual:
        return usual[name]
    raise KeyError(name)


def _annotation(cls: type, name: str, param: inspect.Parameter) -> Any:
    try:
        hints = typing.get_type_hints(cls.__init__)
    except Exception:  # noqa: BLE001 - unresolvable string annotations: use what is there
        hints = {}
    annotation = hints.get(name, param.annotation)
    return None if annotation is inspect.Parameter.empty else annotation


def build_config(
    annotation: Any, name: str, given: Mapping[str, Any], usual: Mapping[str, Any] = CONSTRUCTOR_DEFAULTS
) -> Any:
    """A configuration object for a constructor parameter: a dataclass of the annotated type (its
    defaults, then the usual names, then the user's values), an instance of an HF-style config class
    (``PretrainedConfig`` subclasses take keyword arguments), else a :class:`ConfigNamespace`."""
    values = dict(given.get(name) or {}) if isinstance(given.get(name), Mapping) else {}
    flat = {k: v for k, v in given.items() if k != name}
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        kwargs, missing = {}, []
        for f in dataclasses.fields(annotation):
            if not f.init:
                continue
            if f.name in values or f.name in flat:
                kwargs[f.name] = values.get(f.name, flat.get(f.name))
            elif f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
                continue
            elif f.name in usual:
                kwargs[f.name] = usual[f.name]
            else:
                missing.append(f.name)
        if missing:
            raise CannotBuild(
                f"{annotation.__name__} (the {name!r} argument) needs {', '.join(missing)}: give them with "
                f'--init \'{{"{name}": {{"{missing[0]}": ...}}}}\' or [tool.attnlint.verify] init'
            )
        return annotation(**kwargs)
    if isinstance(annotation, type) and annotation.__name__.endswith("Config"):
        try:  # HF-style: every field a keyword argument with a default
            signature = inspect.signature(annotation.__init__)
            accepted = {
                n: _default_for(n, {**flat, **values}, usual)
                for n in list(signature.parameters)[1:]
                if n in values or n in flat or n in usual
            }
            return annotation(**accepted)
        except Exception as exc:  # noqa: BLE001
            raise CannotBuild(f"cannot build {annotation.__name__} for {name!r}: {exc}") from exc
    return ConfigNamespace(**{**usual, **flat, **values})


def constructor_kwargs(
    cls: type, given: Mapping[str, Any], usual: Optional[Mapping[str, Any]] = None
) -> Dict[str, Any]:
    """Arguments for ``cls(...)``: the user's (``given``), then for every other required parameter a
    value by its name (:data:`CONSTRUCTOR_DEFAULTS`), or a configuration object when the parameter
    holds one (dataclass, HF-style config class, or a namespace for ``config``/``cfg``/...).

    ``given`` keys the constructor does not take are fields of its configuration object.
    ``usual`` replaces some usual values for one recipe (a bug that needs two heads to show).
    Raises :class:`CannotBuild` saying which arguments to pass, and how.
    """
    usual = {**CONSTRUCTOR_DEFAULTS, **(usual or {})}
    try:
        signature = inspect.signature(cls.__init__)
    except (TypeError, ValueError):
        return dict(given)
    parameters = list(signature.parameters.items())[1:]
    names = {name for name, _ in parameters}
    takes_kwargs = any(p.kind == p.VAR_KEYWORD for _, p in parameters)
    kwargs = {k: v for k, v in given.items() if k in names or takes_kwargs}
    missing = []
    for name, param in parameters:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or name in kwargs:
            continue
        annotation = _annotation(cls, name, param)
        config_class = isinstance(annotation, type) and (
            dataclasses.is_dataclass(annotation) or annotation.__name__.endswith("Config")
        )
        is_config = config_class or (annotation is None and name.lower() in CONFIG_PARAM_NAMES)
        if param.default is not param.empty:
            continue
        if is_config:
            kwargs[name] = build_config(annotation, name, given, usual)
        elif name in usual:
            kwargs[name] = usual[name]
        else:
            missing.append(name)
    _fit_widths_to_heads(kwargs, parameters, chosen=set(kwargs) - set(given))
    if missing:
        example = ", ".join(f'"{m}": ...' for m in missing)
        raise CannotBuild(
            f"{cls.__name__}() needs {', '.join(missing)}, which have no default and no usual value: "
            f"give them with --init '{{{example}}}' or [tool.attnlint.verify] init"
        )
    return kwargs


def _fit_widths_to_heads(kwargs: Dict[str, Any], parameters, chosen: set) -> None:
    """A model width chosen here must split into the heads the constructor asks for (its default
    `num_heads=8`, or the user's): `dim=6` with 8 heads gives a head dim of 0 and a module that
    cannot run, which says nothing of a fix. Widths the user gave are left alone."""
    defaults = {name: p.default for name, p in parameters if p.default is not p.empty}
    heads = next(
        (v for n in HEAD_COUNT_NAMES for v in (kwargs.get(n, defaults.get(n)),) if isinstance(v, int) and v > 1), None
    )
    if heads is None:
        return
    for name in MODEL_WIDTH_NAMES:
        value = kwargs.get(name)
        if name in chosen and isinstance(value, int) and value % heads:
            kwargs[name] = value * heads


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
