"""What a verification run proves, as plain data (no torch: the parent process builds these)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, NamedTuple


class Check(NamedTuple):
    """One piece of evidence: what was measured, whether it holds, and the numbers behind it."""

    name: str
    passed: bool
    detail: str


@dataclass
class VerificationReport:
    """The evidence for one rule's fix on one device in one dtype.

    ``measurements`` holds the raw numbers (max errors, bounds) that the checks' details quote.
    """

    rule_code: str
    device: str
    dtype: str
    checks: List[Check] = field(default_factory=list)
    measurements: Dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True only if there is evidence and all of it holds."""
        return bool(self.checks) and all(check.passed for check in self.checks)

    def failed_checks(self) -> List[Check]:
        return [check for check in self.checks if not check.passed]

    def check(self, name: str) -> Check:
        for check in self.checks:
            if check.name == name:
                return check
        raise KeyError(f"no check named {name!r} in {[c.name for c in self.checks]}")

    def to_dict(self) -> Dict[str, Any]:
        return {
            "rule_code": self.rule_code,
            "device": self.device,
            "dtype": self.dtype,
            "checks": [list(check) for check in self.checks],
            "measurements": dict(self.measurements),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "VerificationReport":
        return cls(
            rule_code=str(data["rule_code"]),
            device=str(data["device"]),
            dtype=str(data["dtype"]),
            checks=[Check(str(n), bool(p), str(d)) for n, p, d in data.get("checks", [])],
            measurements={str(k): float(v) for k, v in dict(data.get("measurements", {})).items()},
        )

    def summary(self) -> str:
        head = f"{self.rule_code} on {self.device}/{self.dtype}: {'verified' if self.ok else 'NOT verified'}"
        lines = [head] + [f"  [{'ok' if c.passed else 'FAIL'}] {c.name}: {c.detail}" for c in self.checks]
        return "\n".join(lines)
