"""The tables of known callables: what each function, tensor method and nn module does to values.

Each domain module (shapes, scores, softmax, masks, attention, losses, modules) registers its
handlers here, keyed by the callable: a function by its alias-resolved, canonical qualified name
(`torch.softmax` for `F.softmax`, `torch.nn.functional.softmax` or `from torch import softmax`),
a tensor method by its name, an nn module by its class name. The flow machinery looks a call up
and hands it to the handler; a callable in no table is unknown (its tensor arguments escape).

A handler is ``handler(ev, call) -> Optional[Value]``: ``ev`` is the evaluator (its environment
and the facts of the function being analysed), ``call`` a :class:`Call`. Returning None means
"not mine after all" (a method handler that only applies to masks, say); the call is then
treated as unknown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Dict, Optional

import libcst as cst

if TYPE_CHECKING:  # pragma: no cover
    from attnlint.analysis.flow import Evaluator
    from attnlint.analysis.values import Value


@dataclass
class Call:
    node: cst.Call
    name: str  # the qualified function name, the method name, or the module's class name
    # A method call: the tensor it is called on. A module call: the module value.
    receiver: Optional["Value"] = None
    receiver_node: Optional[cst.BaseExpression] = None
    attr: str = ""  # for module calls: the attribute or name the module is bound to

    @property
    def args(self):
        return self.node.args


Handler = Callable[["Evaluator", Call], Optional["Value"]]

# Functions by canonical qualified name (see names.canonical).
FUNCTIONS: Dict[str, Handler] = {}
# Functions known by their last name whatever module they come from (`pad_sequence` exists in
# torch, keras and many projects' utils with the same meaning).
FUNCTIONS_BY_NAME: Dict[str, Handler] = {}
# Tensor methods by name.
METHODS: Dict[str, Handler] = {}
# nn modules (and einops layers) by class name, when called.
MODULES: Dict[str, Handler] = {}


def _register(table: Dict[str, Handler], names):
    def decorate(handler: Handler) -> Handler:
        for name in names:
            if name in table:
                raise ValueError(f"two handlers for {name}")
            table[name] = handler
        return handler

    return decorate


def known_function(qualified: Optional[str]) -> bool:
    """Is `qualified` (canonical) a function one of the tables handles?"""
    if qualified is None or "." not in qualified:
        return False
    return qualified in FUNCTIONS or qualified.rsplit(".", 1)[-1] in FUNCTIONS_BY_NAME


def function(*names: str):
    return _register(FUNCTIONS, names)


def function_named(*names: str):
    return _register(FUNCTIONS_BY_NAME, names)


def method(*names: str):
    return _register(METHODS, names)


def module(*names: str):
    return _register(MODULES, names)


_loaded = False


def load_domains() -> None:
    """Import every domain module, which fills the tables (once)."""
    global _loaded
    if _loaded:
        return
    from attnlint.analysis import (  # noqa: F401
        attention,
        einops_calls,
        losses,
        masks,
        modules,
        recurrent,
        scores,
        shapes,
        softmax,
    )

    _loaded = True
