"""The FFT campaign's cases: a transform, an input family and a shape, named.

Every case is rebuilt from its name alone (:func:`build`), so a failure reported by
the campaign is reproduced by ``x = validation.fft.cases.build(name)``.

Transforms: the complex ``fft``, ``ifft``, ``fft2``, ``fftn``; real input ``rfft``
and ``ihfft`` (real ``x``); Hermitian input ``irfft`` and ``hfft`` (a half spectrum
of ``n // 2 + 1`` complex entries, output length ``n``); ``roundtrip``, the
inverse of the forward transform (``ifft(fft(x))``, or ``ifftn(fftn(x))`` in n-D),
whose reference is ``x`` itself. Input families: ``normal`` (standard normal real
and imaginary parts), ``impulse`` (a single 1 at position ``at``), ``wide``
(normal entries scaled by ``2**U(-30, 30)``, one exponent per entry).
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

import numpy as np

TRANSFORMS = ("fft", "ifft", "fft2", "fftn", "rfft", "irfft", "hfft", "ihfft", "roundtrip")
REAL_INPUT = ("rfft", "ihfft")  # real x
HALF_INPUT = ("irfft", "hfft")  # complex half spectrum, real output of length n
FAMILIES = ("normal", "impulse", "wide")


@dataclass(frozen=True)
class Case:
    """One transform of one input.

    Attributes
    ----------
    transform : str
        One of :data:`TRANSFORMS`.
    family : str
        One of :data:`FAMILIES`.
    shape : tuple of int
        The transform's lengths (the output length ``n`` for ``irfft``/``hfft``).
    at : int
        The impulse's position (flat index; family ``impulse`` only).
    """

    transform: str
    family: str
    shape: tuple
    at: int = 0

    @property
    def name(self) -> str:
        dims = "x".join(map(str, self.shape))
        return f"{self.transform}-{self.family}-{dims}" + (
            f"-at{self.at}" if self.family == "impulse" else "")

    @property
    def size(self) -> int:
        """``N``: the number of points transformed (all axes)."""
        return math.prod(self.shape)


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng([20261201, zlib.crc32(name.encode())])


def input_shape(c: Case) -> tuple:
    """The shape of the input array (a half spectrum for ``irfft``/``hfft``)."""
    return (c.shape[0] // 2 + 1,) if c.transform in HALF_INPUT else c.shape


def build(case: Case | str) -> np.ndarray:
    """The input of a case (or of its name), reproducibly: float64 or complex128."""
    c = find(case) if isinstance(case, str) else case
    shape = input_shape(c)
    real = c.transform in REAL_INPUT
    if c.family == "impulse":
        x = np.zeros(shape, np.float64 if real else np.complex128)
        x.flat[c.at] = 1.0
        return x
    rng = _rng(c.name)
    x = rng.standard_normal(shape)
    if not real:
        x = x + 1j * rng.standard_normal(shape)
    if c.family == "wide":
        x = x * np.exp2(rng.uniform(-30.0, 30.0, shape))
    return x


def _powers(top: int) -> list[Case]:
    return [Case("fft", "normal", (2 ** e,)) for e in range(1, top + 1)]


def quick_cases() -> list[Case]:
    """The CI tier (well under a minute on two cores)."""
    cs = [Case("fft", "normal", (2 ** e,)) for e in (1, 3, 6, 9, 12, 14)]
    cs += [Case("fft", "normal", (n,)) for n in (17, 61, 1009, 2053, 3 * 5 * 7 * 64)]
    cs += [Case("ifft", "normal", (n,)) for n in (1024, 2053)]
    cs += [Case("fft", "impulse", (1024,), j) for j in (0, 1, 511, 1023)]
    cs += [Case("fft", "impulse", (6720,), 1), Case("fft", "impulse", (1009,), 3),
           Case("fft", "impulse", (2053,), 5)]
    cs += [Case("fft", "wide", (n,)) for n in (1024, 6720, 2053)]
    cs += [Case("rfft", "wide", (1024,)), Case("fft2", "wide", (64, 96))]
    for t in ("rfft", "irfft", "hfft", "ihfft"):
        cs += [Case(t, "normal", (n,)) for n in (1024, 1009, 2053)]
    cs += [Case("rfft", "normal", (6720,)), Case("fft2", "normal", (64, 96)),
           Case("fftn", "normal", (16, 16, 16)), Case("fftn", "normal", (32, 32, 32))]
    cs += [Case("roundtrip", "normal", s) for s in ((1024,), (6720,), (2053,), (16, 16, 16))]
    return _ordered(cs)


def full_cases() -> list[Case]:
    """The full tier: the quick cases, every power of two to ``2**20``, the Bluestein
    prime 65537, 3-D ``64**3`` and ``128**3``."""
    cs = quick_cases() + _powers(20)
    cs += [Case(t, "normal", (65537,)) for t in ("fft", "ifft", "rfft", "irfft", "hfft",
                                                  "ihfft", "roundtrip")]
    cs += [Case("fft", "impulse", (2 ** 20,), 12345), Case("fft", "impulse", (65537,), 7),
           Case("fft", "wide", (65537,)), Case("fft", "wide", (2 ** 20,))]
    cs += [Case(t, "normal", (2 ** 20,)) for t in ("rfft", "irfft", "roundtrip")]
    cs += [Case("roundtrip", "normal", (1009,)), Case("fft2", "normal", (512, 768)),
           Case("fftn", "normal", (64, 64, 64)), Case("fftn", "normal", (128, 128, 128)),
           Case("fftn", "wide", (64, 64, 64)), Case("roundtrip", "normal", (64, 64, 64))]
    return _ordered(cs)


def _ordered(cs: list[Case]) -> list[Case]:
    """Without repeats, by transform, input family, number of points, shape."""
    unique = {c.name: c for c in cs}.values()
    return sorted(unique, key=lambda c: (TRANSFORMS.index(c.transform),
                                         FAMILIES.index(c.family), c.size, c.shape, c.at))


def cases(quick: bool) -> list[Case]:
    return quick_cases() if quick else full_cases()


def find(name: str) -> Case:
    """The case of that name (either tier)."""
    for c in full_cases():
        if c.name == name:
            return c
    raise KeyError(f"no FFT case named {name!r}")
