"""``[tool.attnlint.verify]``: what a project tells the verifier (torch-free, parent side).

    [tool.attnlint.verify]
    device = ["cpu"]                  # or "cpu,cuda"
    dtype = ["float32"]               # or per device: {cpu = ["float64", "float32"]}
    timeout = 180                     # seconds per finding
    memory = "16GiB"                  # address-space limit of the child (CPU-only machines)
    init = {d_model = 64}             # constructor arguments for every entry
    [tool.attnlint.verify.init-by-entry]
    MultiHeadAttention = {d_model = 64, num_heads = 4}

Command-line options (``--device``, ``--dtype``, ``--init``, ``--timeout``) override these.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence

from attnlint.config import ConfigError, find_config

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

KNOWN_DTYPES = ("float64", "float32", "float16", "bfloat16")
KNOWN_DEVICES = ("cpu", "cuda")
DEFAULT_TIMEOUT_S = 180.0
DEFAULT_MEMORY_BYTES = 16 * 1024**3


@dataclass
class VerifyOptions:
    devices: Optional[List[str]] = None  # None: cpu, plus cuda when the child finds it
    dtypes: Optional[List[str]] = None  # None: each device's defaults
    timeout_s: float = DEFAULT_TIMEOUT_S
    memory_bytes: int = DEFAULT_MEMORY_BYTES
    init: Dict[str, Any] = field(default_factory=dict)
    init_by_entry: Dict[str, Dict[str, Any]] = field(default_factory=dict)

    def init_for(self, entry: str) -> Dict[str, Any]:
        return {**self.init, **self.init_by_entry.get(entry, {})}

    def dtypes_by_device(self) -> Optional[Dict[str, List[str]]]:
        if self.dtypes is None:
            return None
        return {device: list(self.dtypes) for device in (self.devices or ["cpu", "cuda"])}


def split_list(value: Any, what: str, known: Sequence[str]) -> List[str]:
    items = value if isinstance(value, list) else str(value).split(",")
    out = [str(v).strip().lower() for v in items if str(v).strip()]
    for item in out:
        if item.split(":")[0] not in known:
            raise ConfigError(f"unknown {what} {item!r}; known: {', '.join(known)}")
    return out


def parse_init(text: str) -> Dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"--init takes a JSON object such as '{{\"d_model\": 64}}': {exc}") from exc
    if not isinstance(value, dict):
        raise ConfigError("--init takes a JSON object such as '{\"d_model\": 64}'")
    return value


def parse_memory(value: Any) -> int:
    if isinstance(value, int):
        return value
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B)?\s*", str(value), re.IGNORECASE)
    if not match:
        raise ConfigError(f"memory must be bytes or a size such as '8GiB', not {value!r}")
    scale = {"k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}.get((match.group(2) or " ")[0].lower(), 1)
    return int(float(match.group(1)) * scale)


def load_verify_options(start: Path, config: Optional[Path] = None) -> VerifyOptions:
    """The ``[tool.attnlint.verify]`` table of the closest configuration, checked."""
    path = config if config is not None else find_config(start if start.is_dir() else start.parent)
    options = VerifyOptions()
    if path is None:
        return options
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    table = data.get("tool", {}).get("attnlint", {}).get("verify", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.attnlint.verify] must be a table")
    for key, value in table.items():
        key = key.replace("_", "-")
        if key == "device":
            options.devices = split_list(value, "device", KNOWN_DEVICES)
        elif key == "dtype":
            options.dtypes = split_list(value, "dtype", KNOWN_DTYPES)
        elif key == "timeout":
            options.timeout_s = float(value)
        elif key == "memory":
            options.memory_bytes = parse_memory(value)
        elif key == "init":
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: [tool.attnlint.verify] init must be a table")
            options.init = dict(value)
        elif key == "init-by-entry":
            if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
                raise ConfigError(f"{path}: [tool.attnlint.verify.init-by-entry] must be a table of tables")
            options.init_by_entry = {k: dict(v) for k, v in value.items()}
        else:
            raise ConfigError(
                f"{path}: unknown key `{key}` in [tool.attnlint.verify]; "
                "known: device, dtype, timeout, memory, init, init-by-entry"
            )
    return options


def merged(options: VerifyOptions, overrides: Mapping[str, Any]) -> VerifyOptions:
    """``options`` with the command line's values (those not None) on top."""
    out = VerifyOptions(**{**options.__dict__})
    for key, value in overrides.items():
        if value is None:
            continue
        if key == "init":
            out.init = {**out.init, **value}
        else:
            setattr(out, key, value)
    return out
