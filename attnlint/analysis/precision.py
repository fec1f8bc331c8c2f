"""Precision evidence: can the tensors of a function be half precision, and what shows it.

Two kinds of evidence, both things the code itself says:

- *the file runs in half precision*: `.half()` / `.bfloat16()`, `torch.autocast` (and the older
  `torch.cuda.amp.autocast`), `torch.float16` / `torch.half` / `torch.bfloat16` anywhere in it,
  or a training set-up in mixed precision (a `GradScaler`, apex `amp.initialize`,
  `precision=16`, `fp16=True`, `mixed_precision="fp16"`, a `--fp16` flag), or a configuration
  that selects it (a `fp16: bool = True` field, `self.use_fp16 = True`, `dtype: str = "float16"`);
- *the function is written for any dtype*: it takes a `dtype` parameter, or casts to an input's
  dtype (`.to(q.dtype)`, `dtype=x.dtype`, `.type_as(x)`), so its inputs are not assumed float32.

Float32-only code shows neither: the classic `masked_fill(mask == 0, -1e9)` in a float32 model
has no precision problem, and the analysis says so by finding no evidence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, FrozenSet, Iterator, Optional, Tuple

import libcst as cst

from attnlint.analysis.names import qualify
from attnlint.analysis.names import child_nodes

HALF_DTYPES = ("float16", "bfloat16")
_DTYPE_NAMES = {
    "torch.float16": "float16",
    "torch.half": "float16",
    "torch.bfloat16": "bfloat16",
}


@dataclass(frozen=True)
class PrecisionEvidence:
    dtypes: FrozenSet[str]  # the half dtypes the code can run in
    reason: str  # what shows it, for messages: "the file calls `.half()`"

    def __bool__(self) -> bool:
        return bool(self.dtypes)


NO_EVIDENCE = PrecisionEvidence(frozenset(), "")


def file_evidence(module: cst.Module, aliases: Dict[str, str]) -> PrecisionEvidence:
    """What in the file shows it runs in half precision (the first kind of each, in order)."""
    dtypes, reasons = set(), []
    for node in _walk(module):
        found = _half_use(node, aliases)
        if found is None:
            continue
        kinds, reason = found
        new = set(kinds) - dtypes
        if new:
            dtypes |= new
            reasons.append(reason)
    return PrecisionEvidence(frozenset(dtypes), " and ".join(reasons)) if dtypes else NO_EVIDENCE


def function_evidence(function_node: Optional[cst.CSTNode], aliases: Dict[str, str]) -> PrecisionEvidence:
    """The function is written for any dtype: a `dtype` parameter or a cast to an input's dtype."""
    if not isinstance(function_node, cst.FunctionDef):
        return NO_EVIDENCE
    params = function_node.params
    for param in list(params.posonly_params) + list(params.params) + list(params.kwonly_params):
        if param.name.value == "dtype" or param.name.value.endswith("_dtype"):
            return PrecisionEvidence(frozenset(HALF_DTYPES), f"`{function_node.name.value}` takes a `dtype`")
    for node in _walk(function_node.body):
        if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
            continue
        method = node.func.attr.value
        if method == "type_as" or (method == "to" and any(_is_dtype_of_tensor(a.value) for a in node.args)):
            code = cst.Module([]).code_for_node(node.func.attr)
            return PrecisionEvidence(
                frozenset(HALF_DTYPES), f"`{function_node.name.value}` casts to its input's dtype (`.{code}(...)`)"
            )
        if any(
            a.keyword is not None and a.keyword.value == "dtype" and _is_dtype_of_tensor(a.value) for a in node.args
        ):
            return PrecisionEvidence(
                frozenset(HALF_DTYPES), f"`{function_node.name.value}` builds tensors in its input's dtype"
            )
    return NO_EVIDENCE


def _is_dtype_of_tensor(node: cst.BaseExpression) -> bool:
    """`q.dtype`, `self.q_proj.weight.dtype`, `hidden_states.dtype` (not `torch.float32`)."""
    return (
        isinstance(node, cst.Attribute)
        and node.attr.value == "dtype"
        and not (isinstance(node.value, cst.Name) and node.value.value == "torch")
    )


def _half_use(node: cst.CSTNode, aliases: Dict[str, str]) -> Optional[Tuple[Tuple[str, ...], str]]:
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and not node.args:
        if node.func.attr.value == "half":
            return ("float16",), "the file calls `.half()`"
        if node.func.attr.value == "bfloat16":
            return ("bfloat16",), "the file calls `.bfloat16()`"
    if isinstance(node, cst.Call):
        qualified = qualify(node.func, aliases) or ""
        if qualified.endswith(".autocast") or qualified == "autocast":
            return _autocast_dtypes(node, qualified, aliases), "the file runs under `autocast`"
        trainer = _mixed_precision_setting(node, qualified)
        if trainer is not None:
            return trainer
    setting = _configured_precision(node)
    if setting is not None:
        return setting
    if isinstance(node, cst.Attribute):
        dtype = _DTYPE_NAMES.get(qualify(node, aliases) or "")
        if dtype is not None:
            return (dtype,), f"the file uses `torch.{node.attr.value}`"
    return None


# Trainer settings that turn on mixed precision: keyword -> {value as written: dtype}.
_MIXED_PRECISION_KEYWORDS = {
    "fp16": {True: "float16"},  # transformers' TrainingArguments(fp16=True)
    "bf16": {True: "bfloat16"},
    "mixed_precision": {"fp16": "float16", "bf16": "bfloat16"},  # accelerate's Accelerator
    "precision": {16: "float16", "16": "float16", "16-mixed": "float16", "bf16": "bfloat16", "bf16-mixed": "bfloat16"},
}
# Command-line flags that switch a script to half precision (`parser.add_argument("--fp16")`).
_HALF_FLAGS = {"--fp16": "float16", "--half": "float16", "--bf16": "bfloat16"}


def _mixed_precision_setting(call: cst.Call, qualified: str) -> Optional[Tuple[Tuple[str, ...], str]]:
    """Training set up in mixed precision: `GradScaler()` (only fp16 needs one), apex's
    `amp.initialize`, `Trainer(precision=16)`, `TrainingArguments(fp16=True)`,
    `Accelerator(mixed_precision="fp16")`, or a `--fp16` command-line flag."""
    name = qualified.rsplit(".", 1)[-1] if qualified else getattr(call.func, "attr", getattr(call.func, "value", ""))
    name = name.value if isinstance(name, cst.Name) else name
    if name == "GradScaler":
        return ("float16",), "the file trains with a `GradScaler`"
    if qualified.endswith("amp.initialize"):
        return ("float16",), "the file uses apex `amp.initialize`"
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in _MIXED_PRECISION_KEYWORDS:
            if arg.keyword.value == "precision" and name not in ("Trainer", "Fabric"):
                continue  # `set_printoptions(precision=16)` is about printing
            dtype = _MIXED_PRECISION_KEYWORDS[arg.keyword.value].get(_literal(arg.value))
            if dtype is not None:
                return (dtype,), f"the file sets `{arg.keyword.value}=` to {dtype} mixed precision"
    if name == "add_argument" and call.args and isinstance(call.args[0].value, cst.SimpleString):
        dtype = _HALF_FLAGS.get(call.args[0].value.evaluated_value)
        if dtype is not None:
            return (dtype,), f"the script takes a `{call.args[0].value.evaluated_value}` flag"
    return None


# Settings a configuration names (a dataclass field, an attribute, a dict entry, a keyword) that
# turn half precision on when set to True: `fp16: bool = True`, `self.use_fp16 = True`.
_HALF_SWITCHES = {
    "fp16": "float16",
    "use_fp16": "float16",
    "half": "float16",
    "use_half": "float16",
    "half_precision": "float16",
    "bf16": "bfloat16",
    "use_bf16": "bfloat16",
}
# Strings that name a half dtype where a setting holds one (`dtype="float16"`,
# `torch_dtype: str = "bfloat16"`, `mixed_precision = "fp16"`).
_HALF_DTYPE_STRINGS = {
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
    "16-mixed": "float16",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "bf16-mixed": "bfloat16",
}


def _configured_precision(node: cst.CSTNode) -> Optional[Tuple[Tuple[str, ...], str]]:
    """A configuration that selects half precision: a setting named for it (`fp16: bool = True`
    in a dataclass, `self.use_fp16 = True`, `{"bf16": True}`), or a dtype setting holding a
    half dtype's name (`dtype: str = "float16"`, `torch_dtype="bfloat16"`,
    `add_argument("--dtype", default="fp16")`)."""
    for name, value in _settings(node):
        if name is None or value is None:
            continue
        key = name.lower().lstrip("-").replace("-", "_")
        if _HALF_SWITCHES.get(key) and _literal(value) is True:
            dtype = _HALF_SWITCHES[key]
            return (dtype,), f"the file sets `{name}` to True"
        if _names_dtype_setting(key) and isinstance(value, cst.SimpleString):
            dtype = _HALF_DTYPE_STRINGS.get(str(value.evaluated_value).lower())
            if dtype is not None:
                return (dtype,), f"the file sets `{name}` to \"{value.evaluated_value}\""
    return None


def _names_dtype_setting(key: str) -> bool:
    return key in ("dtype", "precision", "mixed_precision") or key.endswith("_dtype") or key.endswith("_precision")


def _settings(node: cst.CSTNode) -> Iterator[Tuple[Optional[str], Optional[cst.BaseExpression]]]:
    """(setting name, value written) pairs a node writes: an assignment to a name or attribute,
    an annotated field, a dict entry with a string key, a keyword argument, and argparse's
    `add_argument("--name", default=...)`."""
    if isinstance(node, cst.Assign):
        for target in node.targets:
            yield _setting_name(target.target), node.value
    elif isinstance(node, cst.AnnAssign):
        yield _setting_name(node.target), node.value
    elif isinstance(node, cst.DictElement) and isinstance(node.key, cst.SimpleString):
        yield str(node.key.evaluated_value), node.value
    elif isinstance(node, cst.Call):
        func = node.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value == "add_argument"
            and node.args
            and isinstance(node.args[0].value, cst.SimpleString)
        ):
            default = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "default"), None)
            yield str(node.args[0].value.evaluated_value), default
            return
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value not in _MIXED_PRECISION_KEYWORDS:
                yield arg.keyword.value, arg.value


def _setting_name(target: cst.BaseExpression) -> Optional[str]:
    if isinstance(target, cst.Name):
        return target.value
    if isinstance(target, cst.Attribute):
        return target.attr.value
    return None


def _literal(node: cst.BaseExpression):
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value == "True"
    if isinstance(node, cst.Integer):
        return int(node.value)
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value
    return None


def _autocast_dtypes(call: cst.Call, qualified: str, aliases: Dict[str, str]) -> Tuple[str, ...]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "dtype":
            dtype = _DTYPE_NAMES.get(qualify(arg.value, aliases) or "")
            return (dtype,) if dtype else HALF_DTYPES
    device = None
    positional = [a for a in call.args if a.keyword is None]
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "device_type":
            device = arg.value
    if device is None and positional and "cuda.amp" not in qualified and "cpu.amp" not in qualified:
        device = positional[0].value
    text = device.evaluated_value if isinstance(device, cst.SimpleString) else None
    if "cpu.amp" in qualified or text == "cpu":
        return ("bfloat16",)  # CPU autocast's default
    if "cuda.amp" in qualified or text == "cuda":
        return ("float16",)  # CUDA autocast's default
    return HALF_DTYPES


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    yield node
    for child in child_nodes(node):
        yield from _walk(child)


_FLOAT32_CASTS = ("float", "double")
_FLOAT32_DTYPES = ("torch.float32", "torch.float", "torch.float64", "torch.double")


def cast_to_float32_before(function_node: Optional[cst.CSTNode], receiver: Optional[cst.BaseExpression], site) -> bool:
    """The filled tensor was cast to float32 (or float64) in this function before the fill:
    `scores = scores.float()` (OpenNMT), `scores.to(torch.float32).masked_fill(...)`. Whatever
    the inputs' precision, the fill then meets a float32 tensor. Read from the last assignment of
    the receiver's name before the statement holding the fill, in the order the body is
    written."""
    if receiver is None:
        return False
    if _float32_cast(receiver):
        return True
    if not isinstance(receiver, cst.Name) or not isinstance(function_node, cst.FunctionDef):
        return False
    last = None
    for node in _walk_in_order(function_node.body):
        if any(n is site for n in _walk(node)) and isinstance(node, cst.BaseSmallStatement):
            break
        if isinstance(node, cst.Assign) and any(
            isinstance(t.target, cst.Name) and t.target.value == receiver.value for t in node.targets
        ):
            last = node.value
    return last is not None and _float32_cast(last)


def _float32_cast(node: cst.BaseExpression) -> bool:
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
        return False
    method = node.func.attr.value
    if method in _FLOAT32_CASTS and not node.args:
        return True
    if method in ("to", "type") and node.args:
        dtype = node.args[0].value
        spelled = ".".join(
            n.value for n in _walk(dtype) if isinstance(n, cst.Name)
        )
        return spelled.replace(".", "") in {d.replace(".", "") for d in _FLOAT32_DTYPES}
    return False


def _walk_in_order(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Pre-order, children in source order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(list(child_nodes(current))))
