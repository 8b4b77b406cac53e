"""The FFT campaign's cases: a transform, an input family and a shape, named.

Every case is rebuilt from its name alone (:func:`build`), so a failure reported by
the campaign is reproduced by ``x = validation.fft.cases.build(name)``.

Transforms: the complex ``fft``, ``ifft``, ``fft2``, ``fftn``; real input ``rfft``
and ``ihfft`` (real ``x``); Hermitian input ``irfft`` and ``hfft`` (a half spectrum
of ``n // 2 + 1`` complex entries, output length ``n``); ``roundtrip``, the
inverse of the forward transform (``ifft(fft(x))``, or ``ifftn(fftn(x))`` in n-D),
whose reference is ``x`` itself; the real-to-real ``dct``, ``idct``, ``dst``,
``idst`` and the n-D ``dctn``, ``idctn``, ``dstn``, ``idstn`` (real ``x``), each of a
type 1-4 and a ``norm`` (:data:`R2R`). Input families: ``normal`` (standard normal real
and imaginary parts), ``impulse`` (a single 1 at position ``at``), ``wide``
(normal entries scaled by ``2**U(-30, 30)``, one exponent per entry).

Names are ``transform-input-shape`` (``-atJ`` for an impulse); a real-to-real case's
transform carries its type, and its norm when not the default: ``dct2-normal-1024``,
``idst3-ortho-normal-1009``, ``dctn2-normal-16x16x16``.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

import numpy as np

R2R = ("dct", "idct", "dst", "idst", "dctn", "idctn", "dstn", "idstn")  # real x, a type
TRANSFORMS = ("fft", "ifft", "fft2", "fftn", "rfft", "irfft", "hfft", "ihfft",
              "roundtrip") + R2R
REAL_INPUT = ("rfft", "ihfft")  # real x (and the R2R)
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
    type : int
        The DCT/DST type, 1-4 (:data:`R2R` only; 0 for the FFTs).
    norm : str or None
        ``"ortho"`` or ``"forward"`` (:data:`R2R` only; ``None``: scipy's default,
        ``"backward"``).
    """

    transform: str
    family: str
    shape: tuple
    at: int = 0
    type: int = 0
    norm: str | None = None

    @property
    def name(self) -> str:
        dims = "x".join(map(str, self.shape))
        head = self.transform + (str(self.type) if self.type else "") + (
            f"-{self.norm}" if self.norm else "")
        return f"{head}-{self.family}-{dims}" + (
            f"-at{self.at}" if self.family == "impulse" else "")

    @property
    def r2r(self) -> bool:
        """Whether a real-to-real transform (a DCT or DST)."""
        return self.transform in R2R

    @property
    def options(self) -> dict:
        """The keywords of the call beside the input: ``type`` and ``norm`` (R2R)."""
        return {"type": self.type, "norm": self.norm} if self.r2r else {}

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
    real = c.transform in REAL_INPUT or c.r2r
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
    """The CI tier (well under a minute on two cores), the DCT/DST's included
    (:func:`r2r_quick_cases`)."""
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
    return _ordered(cs + r2r_quick_cases())


#: The DCT/DST lengths of the quick tier, every type of ``dct`` and ``dst``: with
#: ``fft.reduced.reduction``, the direct product with the matrix takes 7, 15 and 16 for
#: types II and III, 7, 15, 16, 17 (and the inverses' 18) for type I and 7, 15, 17 for
#: type IV; the mirrored extension type I from 60 on and type IV at the odd 1001, 1009,
#: 2053; Makhoul's ``N``-point real FFT 17, 1001, 1009 and 2053 (types II, III); the
#: ``N/2``-point complex FFT 16 (type IV), 18, 60 and 1024 (types II-IV). Primes: 7, 17,
#: 1009 (one dense stage), 2053 (Bluestein).
R2R_QUICK = (7, 16, 17, 1001, 1009, 1024, 2053)


def r2r_quick_cases() -> list[Case]:
    """The DCT/DST cases of the quick tier: every type of ``dct`` and ``dst`` at
    :data:`R2R_QUICK` (``norm="backward"``), at 60 (``"ortho"``) and 15 (``"forward"``);
    ``idct``/``idst`` of every type at 18, 1009 (``"forward"``) and 1024 (``"ortho"``);
    wide and impulse input; four small 3-D transforms."""
    cs = []
    for k in ("dct", "dst"):
        for t in (1, 2, 3, 4):
            cs += [Case(k, "normal", (n,), type=t) for n in R2R_QUICK]
            cs += [Case(k, "normal", (60,), type=t, norm="ortho"),
                   Case(k, "normal", (15,), type=t, norm="forward")]
            cs += [Case("i" + k, "normal", (n,), type=t, norm=norm)
                   for n, norm in ((18, None), (1009, "forward"), (1024, "ortho"))]
    cs += [Case("dct", "wide", (1024,), type=2), Case("dst", "wide", (2053,), type=4),
           Case("dct", "impulse", (1024,), 1, type=2), Case("dst", "impulse", (1009,), 3, type=4)]
    cs += [Case("dctn", "normal", (32, 32, 32), type=2),
           Case("dstn", "normal", (16, 18, 17), type=3),
           Case("idctn", "normal", (16, 16, 16), type=4, norm="ortho"),
           Case("idstn", "normal", (8, 9, 10), type=1)]
    return cs


def r2r_full_cases() -> list[Case]:
    """The DCT/DST cases the full tier adds: every type of ``dct`` and ``dst`` at 4096,
    6720, 16384, the Bluestein prime 65537 and ``2**20``; the inverses at 65536
    (``"ortho"``); wide input at ``2**20`` and 65537; 3-D ``64**3`` (and ``64 x 60 x 65``)
    and ``128**3``."""
    cs = []
    for k in ("dct", "dst"):
        for t in (1, 2, 3, 4):
            cs += [Case(k, "normal", (n,), type=t) for n in (4096, 6720, 16384, 65537, 2 ** 20)]
            cs += [Case("i" + k, "normal", (65536,), type=t, norm="ortho")]
    cs += [Case("dct", "wide", (2 ** 20,), type=2), Case("dst", "wide", (65537,), type=3)]
    cs += [Case("dctn", "normal", (64, 64, 64), type=2),
           Case("dstn", "normal", (64, 60, 65), type=4),
           Case("dctn", "normal", (128, 128, 128), type=2),
           Case("idctn", "normal", (64, 64, 64), type=3, norm="ortho")]
    return cs


def full_cases() -> list[Case]:
    """The full tier: the quick cases, every power of two to ``2**20``, the Bluestein
    prime 65537, 3-D ``64**3`` and ``128**3``; the DCT/DST's (:func:`r2r_full_cases`)."""
    cs = quick_cases() + _powers(20)
    cs += [Case(t, "normal", (65537,)) for t in ("fft", "ifft", "rfft", "irfft", "hfft",
                                                  "ihfft", "roundtrip")]
    cs += [Case("fft", "impulse", (2 ** 20,), 12345), Case("fft", "impulse", (65537,), 7),
           Case("fft", "wide", (65537,)), Case("fft", "wide", (2 ** 20,))]
    cs += [Case(t, "normal", (2 ** 20,)) for t in ("rfft", "irfft", "roundtrip")]
    cs += [Case("roundtrip", "normal", (1009,)), Case("fft2", "normal", (512, 768)),
           Case("fftn", "normal", (64, 64, 64)), Case("fftn", "normal", (128, 128, 128)),
           Case("fftn", "wide", (64, 64, 64)), Case("roundtrip", "normal", (64, 64, 64))]
    return _ordered(cs + r2r_full_cases())


def _ordered(cs: list[Case]) -> list[Case]:
    """Without repeats, by transform, type, input family, number of points, shape, norm."""
    unique = {c.name: c for c in cs}.values()
    return sorted(unique, key=lambda c: (TRANSFORMS.index(c.transform), c.type,
                                         FAMILIES.index(c.family), c.size, c.shape, c.at,
                                         c.norm or ""))


def cases(quick: bool) -> list[Case]:
    return quick_cases() if quick else full_cases()


def find(name: str) -> Case:
    """The case of that name (either tier)."""
    for c in full_cases():
        if c.name == name:
            return c
    raise KeyError(f"no FFT case named {name!r}")
