"""Symbolic sizes: products of named quantities with rational exponents.

A tensor's dimension or a scalar the code computes (`dim // heads`, `d_k ** -0.5`,
`1 / math.sqrt(self.head_dim)`) is a monomial `c * a**e * b**f ...` over *atoms*: quantities the
analysis cannot reduce further (a parameter of `__init__`, the `d` of `b, n, d = x.shape`, a
size read from an unknown tensor). Monomials are closed under what scales and shapes need
(products, quotients, powers, square roots), and equality is structural, so "is this scale
`1/sqrt(head_dim)`?" is a comparison of exponents. Sums and anything else are not monomials:
they evaluate to None (unknown), and unknown never fires.

Floor division of atoms is read as exact division (`dim // heads` is the per-head width of a
model whose width is a multiple of the head count, which the code asserts or assumes).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Dict, Optional, Tuple, Union

Number = Union[int, Fraction]


@dataclass(frozen=True)
class Atom:
    """An irreducible quantity. `key` identifies it (unique per scope); `name` is how the code
    calls it, for messages (`head_dim`, `x.shape[-1]`)."""

    key: str
    name: str

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return self.name


@dataclass(frozen=True)
class Sym:
    coeff: Fraction = Fraction(1)
    factors: Tuple[Tuple[Atom, Fraction], ...] = ()  # sorted by atom key, no zero exponents

    # -------------------------------------------------------------- construction
    @staticmethod
    def const(value: Number) -> "Sym":
        return Sym(coeff=Fraction(value))

    @staticmethod
    def atom(key: str, name: Optional[str] = None) -> "Sym":
        return Sym(factors=((Atom(key, name or key), Fraction(1)),))

    @staticmethod
    def _make(coeff: Fraction, powers: Dict[Atom, Fraction]) -> "Sym":
        items = tuple(sorted(((a, e) for a, e in powers.items() if e != 0), key=lambda item: item[0].key))
        return Sym(coeff=coeff, factors=items)

    # -------------------------------------------------------------- algebra
    def __mul__(self, other: "Sym") -> "Sym":
        powers = dict(self.factors)
        for atom, exp in other.factors:
            powers[atom] = powers.get(atom, Fraction(0)) + exp
        return Sym._make(self.coeff * other.coeff, powers)

    def __truediv__(self, other: "Sym") -> Optional["Sym"]:
        inverse = other.power(Fraction(-1))
        return None if inverse is None else self * inverse

    def power(self, exponent: Fraction) -> Optional["Sym"]:
        """`self ** exponent`, or None when the coefficient has no rational root."""
        coeff = _rational_power(self.coeff, exponent)
        if coeff is None:
            return None
        return Sym._make(coeff, {a: e * exponent for a, e in self.factors})

    def floordiv(self, other: "Sym") -> Optional["Sym"]:
        if self.is_const and other.is_const:
            if other.coeff == 0:
                return None
            return Sym.const(self.coeff // other.coeff)
        return self / other

    def substitute(self, mapping: Dict[str, "Sym"]) -> Optional["Sym"]:
        """Replace atoms by what they are known to equal (keys of `mapping`)."""
        if not any(a.key in mapping for a, _ in self.factors):
            return self
        out: Optional[Sym] = Sym(coeff=self.coeff)
        for atom, exp in self.factors:
            part = mapping[atom.key].power(exp) if atom.key in mapping else Sym._make(Fraction(1), {atom: exp})
            if part is None or out is None:
                return None
            out = out * part
        return out

    # -------------------------------------------------------------- queries
    @property
    def is_const(self) -> bool:
        return not self.factors

    @property
    def int_value(self) -> Optional[int]:
        if self.is_const and self.coeff.denominator == 1:
            return int(self.coeff)
        return None

    def atoms(self) -> Tuple[Atom, ...]:
        return tuple(a for a, _ in self.factors)

    def exponent_of(self, base: "Sym") -> Optional[Fraction]:
        """The e with self == base ** e, when there is one (base not constant)."""
        if base.is_const or not base.factors:
            return None
        atom, exp = base.factors[0]
        mine = dict(self.factors).get(atom)
        if mine is None:
            return None
        e = mine / exp
        candidate = base.power(e)
        return e if candidate == self else None

    def text(self) -> str:
        """How a person writes it: `dim / heads`, `head_dim ** -0.5`, `8`."""
        num = [(a, e) for a, e in self.factors if e > 0]
        den = [(a, -e) for a, e in self.factors if e < 0]

        def part(items) -> str:
            out = []
            for atom, e in items:
                out.append(atom.name if e == 1 else f"{atom.name} ** {_fmt(e)}")
            return " * ".join(out)

        coeff = self.coeff
        head = part(num)
        if coeff != 1 or not head:
            head = f"{_fmt(coeff)}" + (f" * {head}" if head else "")
        if den:
            tail = part(den)
            return f"{head} / ({tail})" if len(den) > 1 else f"{head} / {tail}"
        return head

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Sym({self.text()})"


ONE = Sym.const(1)


def _fmt(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    return str(float(value))


# Sizes and scales are small numbers: a power whose result would need more bits than this is not
# one of them, and computing it (`2 ** 2 ** 2 ** ...` in a file) could take forever.
_MAX_BITS = 4096


def _rational_power(value: Fraction, exponent: Fraction) -> Optional[Fraction]:
    bits = max(value.numerator.bit_length(), value.denominator.bit_length())
    if bits > _MAX_BITS or bits * abs(exponent.numerator) > _MAX_BITS * exponent.denominator:
        return None
    if exponent.denominator == 1:
        if value == 0 and exponent < 0:
            return None
        return value ** int(exponent)
    if value == 1:
        return Fraction(1)
    if value <= 0:
        return None
    root = exponent.denominator
    num = _int_root(value.numerator, root)
    den = _int_root(value.denominator, root)
    if num is None or den is None:
        return None
    return Fraction(num, den) ** exponent.numerator


def _int_root(value: int, root: int) -> Optional[int]:
    guess = round(value ** (1.0 / root))
    for candidate in (guess - 1, guess, guess + 1):
        if candidate >= 0 and candidate**root == value:
            return candidate
    return None


def product(syms) -> Optional[Sym]:
    out = ONE
    for s in syms:
        if s is None:
            return None
        out = out * s
    return out


def from_float(value: float) -> Optional[Sym]:
    """A literal exponent or constant (`-0.5`, `0.25`, `8`) as an exact rational."""
    frac = Fraction(value).limit_denominator(64)
    if abs(float(frac) - value) > 1e-12:
        return None
    return Sym.const(frac)
