"""Golden digests: the bits of fixed products and transforms, the same on every machine.

The results depend only on the inputs and the options (moduli tables of version
``ozaki.MODULI_VERSION``), never on the machine, the thread count or the engine. This
file pins them: SHA-256 digests of results computed from seeded inputs, stored in
``golden_digests.json`` beside it. A digest that changes is a changed result bit: on a
new machine, a reproducibility bug; after a code change, a change an issue must have
asked for (then regenerate with ``python tests/test_golden.py --update`` and say so).

Every backend must reproduce the same digests: the checks run on ``cpu`` (the default)
and on ``numpy`` (the pure-NumPy reference), which the sets' calls then get by default
(``ozaki.set_backend``). The digests are written from ``cpu``. Calls that leave
``scheme`` and ``engine`` at ``"auto"`` run the machine's fastest scheme, so the sets
pin it (``ozaki.set_scheme``): the way users get the same bits on every machine.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden_digests.json"


def _digest(x) -> str:
    x = np.ascontiguousarray(x)
    return hashlib.sha256(x.dtype.str.encode() + str(x.shape).encode() + x.tobytes()).hexdigest()


def _operands(seed: int, m: int, k: int, n: int):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, k)) * np.exp2(rng.integers(-40, 40, (m, 1)))
    B = rng.standard_normal((k, n)) * np.exp2(rng.integers(-40, 40, (1, n)))
    A[0, :3] = [np.inf, 1e300, -1e-310]  # special values, the overflow guard, a subnormal
    return A, B


def _complex(A: np.ndarray) -> np.ndarray:
    """``A + i A[::-1]`` without multiplying the Inf by ``i`` (which makes a NaN)."""
    Z = A.astype(np.complex128)
    Z.imag = A[::-1]
    return Z


#: The engine of each low-precision scheme's own unit (int7's moduli take INT8 too).
UNITS = {"int8": "cpu-int8", "fp8": "cpu-fp8", "int7": "cpu-int8"}


def emulated() -> dict[str, str]:
    """The emulated path: every scheme, mode and engine, counts auto and explicit."""
    import ozaki
    out = {}
    A, B = _operands(1, 70, 90, 50)
    for scheme in ozaki.SCHEMES:
        engines = ["cpu-blas"] + ([UNITS[scheme]] if scheme in UNITS else [])
        for mode in ozaki.MODES:
            for engine in engines:
                for count in ("auto", 7):
                    C, info = ozaki.dgemm(A, B, scheme=scheme, mode=mode, engine=engine,
                                          num_moduli=count, bounds=True)
                    key = f"dgemm/{scheme}/{mode}/{engine}/{count}"
                    out[key] = _digest(C)
                    out[key + "/bound"] = _digest(info.error_bound)
    Z = ozaki.zgemm(_complex(A), B - 2j * B)
    out["zgemm"] = _digest(Z)
    S = np.random.default_rng(2).standard_normal((6, 20, 30))
    out["matmul"] = _digest(ozaki.matmul(S, S.transpose(0, 2, 1)))
    return out


def compensated() -> dict[str, str]:
    """The small-product path (with ``num_moduli="auto"``)."""
    import ozaki
    out = {}
    A, B = _operands(3, 30, 40, 20)
    for mode in ozaki.MODES:
        C, info = ozaki.dgemm(A, B, mode=mode, bounds=True)
        assert info.path == "compensated"
        out[f"dgemm/{mode}"] = _digest(C)
        out[f"dgemm/{mode}/bound"] = _digest(info.error_bound)
    out["zgemm"] = _digest(ozaki.zgemm(_complex(A), B - 2j * B))
    return out


def transforms() -> dict[str, str]:
    """The FFTs (their stages are emulated products with prepared operands)."""
    import fft
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 1000)) + 1j * rng.standard_normal((3, 1000))
    out = {"fft": _digest(fft.fft(x)), "ifft/2039": _digest(fft.ifft(x[0, :2039 // 2]))}
    out["rfftn"] = _digest(fft.rfftn(rng.standard_normal((12, 10, 18))))
    out["fft/prime"] = _digest(fft.fft(rng.standard_normal(2053)))
    return out


def factorisations() -> dict[str, str]:
    """``ozaki.linalg``: the factors' bits depend on the input, block size and options."""
    from ozaki import linalg
    rng = np.random.default_rng(5)
    A = rng.standard_normal((150, 150))
    out = {}
    for kw in ({}, {"num_moduli": 7}):  # small updates (the compensated path), emulated ones
        lu, piv = linalg.lu_factor(A, block_size=32, **kw)
        out[f"lu_factor/{kw}"] = _digest(lu)
        out[f"lu_factor/{kw}/piv"] = _digest(piv)
    S = (A + A.T) * 0.5 + 600 * np.eye(150)  # element-wise (no BLAS bits): SPD, dominant
    out["cho_factor"] = _digest(linalg.cho_factor(S, block_size=32)[0])
    out["solve_triangular"] = _digest(linalg.solve_triangular(np.triu(S), A, block_size=32))
    return out


def complex_factorisations() -> dict[str, str]:
    """``ozaki.linalg`` on complex matrices (``zgetrf``/``zpotrf``: the complex panels and
    diagonal solves, the complex product) and the BLAS-form ``trsm``/``syrk``. The inputs
    are made by element-wise operations only (no BLAS call whose bits could vary)."""
    from ozaki import linalg
    rng = np.random.default_rng(12)
    n = 96
    A = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    B = rng.standard_normal((n, 3)) - 1j * rng.standard_normal((n, 3))
    H = (A + A.conj().T) * 0.5 + 4 * n * np.eye(n)  # Hermitian, diagonally dominant
    out = {}
    # small updates (the compensated path), emulated ones (5 moduli: fewer bits than the
    # compensated path's, so that the two cases pin different bits)
    for kw in ({}, {"num_moduli": 5}):
        lu, piv = linalg.lu_factor(A, block_size=32, **kw)
        out[f"lu_factor/{kw}"] = _digest(lu)
        out[f"lu_factor/{kw}/piv"] = _digest(piv)
        out[f"lu_solve/C/{kw}"] = _digest(linalg.lu_solve((lu, piv), B, trans=2,
                                                          block_size=32, **kw))
    for lower in (False, True):
        out[f"cho_factor/{lower}"] = _digest(linalg.cho_factor(H, lower=lower,
                                                               block_size=32)[0])
    out["solve_triangular/C"] = _digest(linalg.solve_triangular(A, B, trans="C", lower=True,
                                                                block_size=32))
    out["det"] = _digest(linalg.det(A[:40, :40], block_size=16))
    out["trsm/right"] = _digest(linalg.trsm(0.5 - 2j, A, B.T.copy(), side=1, trans_a=2,
                                            block_size=32))
    out["syrk"] = _digest(linalg.syrk(1 + 1j, A[:, :40], beta=-0.5, c=H, lower=1,
                                      block_size=32))
    return out


def _families(seed: int = 6, m: int = 24, k: int = 40, n: int = 16) -> dict:
    """Operand pairs that reach every branch: spreads, cancellation, subnormal and huge
    magnitudes (the overflow guard), non-finite values and zero lines, integers, and
    rows and columns scaled far apart."""
    rng = np.random.default_rng(seed)

    def spread(phi, shape):
        return (rng.random(shape) - 0.5) * np.exp(phi * rng.standard_normal(shape))
    fam = {f"phi{phi:g}": (spread(phi, (m, k)), spread(phi, (k, n))) for phi in (0.0, 2.0, 8.0)}
    A, B = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    A[:, k // 2:] = A[:, :k // 2]
    B[k // 2:] = -B[:k // 2] * (1 + 2.0 ** -30)  # each entry cancels to ~2**-30 of its terms
    fam["cancel"] = (A, B)
    fam["subnormal"] = (rng.standard_normal((m, k)) * 1e-300, rng.standard_normal((k, n)) * 1e-20)
    fam["huge"] = (rng.standard_normal((m, k)) * 1e150, rng.standard_normal((k, n)) * 1e158)
    A, B = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    A[1, 3], A[2, 5], B[4, 2], A[6, 0] = np.nan, -np.inf, np.inf, -0.0
    A[5], B[:, 7] = 0.0, 0.0
    fam["special"] = (A, B)
    fam["integers"] = (rng.integers(-1000, 1000, (m, k)).astype(float),
                       rng.integers(-1000, 1000, (k, n)).astype(float))
    fam["scaled"] = (rng.standard_normal((m, k)) * np.exp2(rng.integers(-300, 300, (m, 1))),
                     rng.standard_normal((k, n)) * np.exp2(rng.integers(-300, 300, (1, n))))
    return fam


def inputs() -> dict[str, str]:
    """Every input family in every scheme and mode: the automatic count with bounds and
    the exact fallback, and an explicit count without fallback."""
    import ozaki
    out = {}
    for name, (A, B) in _families().items():
        for scheme in ozaki.SCHEMES:
            for mode in ozaki.MODES:
                key = f"{name}/{scheme}/{mode}"
                with np.errstate(all="ignore"):
                    C, info = ozaki.dgemm(A, B, scheme=scheme, mode=mode, bounds=True)
                    out[key + "/auto"] = _digest(C)
                    out[key + "/auto/bound"] = _digest(info.error_bound)
                    out[key + "/5"] = _digest(ozaki.dgemm(A, B, scheme=scheme, mode=mode,
                                                          num_moduli=5, fallback="none"))
    return out


def blas() -> dict[str, str]:
    """gemm's and zgemm's scalars and transposes, and a C that is read."""
    import ozaki
    fam = _families(7, 20, 30, 20)
    A, B = fam["phi2"]
    C0 = np.random.default_rng(8).standard_normal((20, 20))
    out = {}
    for alpha, beta in ((1.0, 0.0), (-2.5, 0.5)):
        for ta in (False, True):
            for tb in (False, True):
                X = A.T.copy() if ta else A
                Y = B.T.copy() if tb else B
                out[f"gemm/{alpha}/{beta}/{ta}/{tb}"] = _digest(ozaki.gemm(
                    X, Y, C0, alpha=alpha, beta=beta, trans_a=ta, trans_b=tb))
    Z, W = _complex(A), B - 3j * B[::-1]
    for ta in ("N", "T", "C"):
        out[f"zgemm/{ta}"] = _digest(ozaki.zgemm(Z.T.copy() if ta != "N" else Z, W,
                                                 C0 + 1j, alpha=1 - 2j, beta=0.5j,
                                                 trans_a=ta))
    out["zgemm/fast/int8"] = _digest(ozaki.zgemm(Z, W, mode="fast", scheme="int8"))
    return out


def prepared() -> dict[str, str]:
    """Prepared operands: the bits of unprepared calls, on reuse too."""
    import ozaki
    fam = _families(9)
    A, B = fam["phi2"]
    _, B2 = fam["scaled"]
    out = {}
    for keep in (True, False):
        P = ozaki.prepare(A, keep_residues=keep)
        for mode in ozaki.MODES:
            for i, Y in enumerate((B, B2, B)):
                out[f"left/{keep}/{mode}/{i}"] = _digest(ozaki.dgemm(P, Y, mode=mode))
    Q = ozaki.prepare(B, side="right")
    out["right"] = _digest(ozaki.dgemm(A, Q, num_moduli=6))
    out["right/complex"] = _digest(ozaki.zgemm(_complex(A), Q))
    return out


def stacks() -> dict[str, str]:
    """matmul's broadcasting, shared operands and vectors."""
    import ozaki
    rng = np.random.default_rng(10)
    S, T = rng.standard_normal((5, 12, 18)), rng.standard_normal((5, 18, 7))
    M, v = rng.standard_normal((18, 7)) * 1e5, rng.standard_normal(18)
    return {"shared_b": _digest(ozaki.matmul(S, M)),
            "shared_a": _digest(ozaki.matmul(M.T.copy(), T)),
            "broadcast": _digest(ozaki.matmul(S[:, None], T[None, :2], mode="fast")),
            "vector_right": _digest(ozaki.matmul(S, v)),
            "vector_left": _digest(ozaki.matmul(v, T)),
            "complex": _digest(ozaki.matmul(S + 1j * S[::-1], T)),
            "int8": _digest(ozaki.matmul(S, T, scheme="int8", mode="fast"))}


def real_transforms() -> dict[str, str]:
    """The real-to-real transforms and more FFT shapes."""
    import fft
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 100))
    out = {}
    for t in (1, 2, 3, 4):
        out[f"dct/{t}"] = _digest(fft.dct(x, type=t))
        out[f"dst/{t}"] = _digest(fft.dst(x, type=t, norm="ortho"))
    out["idct/2/64"] = _digest(fft.idct(rng.standard_normal(64)))
    out["dctn"] = _digest(fft.dctn(rng.standard_normal((6, 8, 10)), type=2))
    out["fft2"] = _digest(fft.fft2(rng.standard_normal((24, 36)) + 1j))
    out["irfft"] = _digest(fft.irfft(rng.standard_normal(51) + 1j * rng.standard_normal(51)))
    out["hfft"] = _digest(fft.hfft(rng.standard_normal(33) + 1j * rng.standard_normal(33)))
    return out


def refinement_price() -> dict[str, str]:
    """Accurate mode's choice between refining a block and more moduli (version 2 of the
    tables: the refinement priced in the scheme's moduli). Entries ``N(0,1) exp(N(0,1))``,
    on which int8 and int7 take extra moduli where version 1 refined most of the
    product in FP64, and the same with the spread on a few rows only, which they refine;
    the count and the refined block are pinned with the bits."""
    import ozaki
    rng = np.random.default_rng(9)
    n = 300
    X = [rng.standard_normal((n, n)) for _ in range(3)]
    wide = X[0] * np.exp(rng.standard_normal((n, n)))
    rows = X[1].copy()
    rows[[3, 70, 141, 299]] = wide[[3, 70, 141, 299]]
    B = X[2] * np.exp(rng.standard_normal((n, n)))
    out = {}
    for name, A in (("whole", wide), ("rows", rows)):
        for scheme in ozaki.SCHEMES:
            C, info = ozaki.dgemm(A, B, scheme=scheme, mode="accurate", bounds=True,
                                  return_info=True)
            key = f"{name}/{scheme}"
            out[key] = _digest(C)
            out[key + "/bound"] = _digest(info.error_bound)
            out[key + "/choice"] = _digest(np.array([info.num_moduli, *info.refined_block]))
    return out


SETS = {"emulated": emulated, "compensated": compensated, "transforms": transforms,
        "factorisations": factorisations, "complex_factorisations": complex_factorisations,
        "inputs": inputs, "blas": blas,
        "prepared": prepared, "stacks": stacks, "real_transforms": real_transforms,
        "refinement_price": refinement_price}
#: The sets computed with the small-product path on (its real threshold); the others run
#: the emulation on their small products (the test suite's default, tests/conftest.py).
REAL_THRESHOLD = ("compensated", "factorisations", "complex_factorisations")
#: The scheme of the sets' calls that leave ``scheme`` and ``engine`` at "auto" (which
#: otherwise follows the machine: int8 on cpu-onednn with VNNI, else fp64)
PINNED = "fp64"


def _compute() -> dict[str, dict[str, str]]:
    import ozaki
    from ozaki.core import compensated as path
    saved = path.SMALL_WORK
    try:
        path.SMALL_WORK = 0
        with ozaki.set_scheme(PINNED):
            got = {name: f() for name, f in SETS.items() if name not in REAL_THRESHOLD}
            path.SMALL_WORK = saved
            got.update({name: SETS[name]() for name in REAL_THRESHOLD})
    finally:
        path.SMALL_WORK = saved
    return got


BACKENDS = ("cpu", "numpy")


def _recorded(monkeypatch) -> list:
    """Record the backend each product call gets, to check that the calls went through
    the one :func:`ozaki.set_backend` made the default."""
    from ozaki.api import calls
    from ozaki.backends import get_backend
    given = []

    def default(be=None):
        got = get_backend(be)
        given.append(got.name)
        return got
    monkeypatch.setattr(calls, "get_backend", default)
    return given


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(SETS))
def test_results_match_the_golden_digests(name, backend, monkeypatch):
    import ozaki
    from ozaki.core import compensated as path
    if name in REAL_THRESHOLD:
        monkeypatch.setattr(path, "SMALL_WORK", 2 ** 24)  # the real threshold
    want = json.loads(GOLDEN.read_text())[name]
    given = _recorded(monkeypatch)
    # the sets call the public functions (the transforms and factorisations through
    # them) without naming a backend: they get the thread's default
    with ozaki.set_backend(backend), ozaki.set_scheme(PINNED):
        got = SETS[name]()
    assert given and set(given) == {backend}
    assert got.keys() == want.keys()
    changed = sorted(k for k in want if got[k] != want[k])
    assert not changed, f"result bits changed: {changed}"


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python tests/test_golden.py --update  (rewrites golden_digests.json)")
    GOLDEN.write_text(json.dumps(_compute(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")


@pytest.mark.parametrize("engine", ["cpu-onednn"])
def test_other_engines_reproduce_the_golden_digests(engine):
    # an engine outside the sets gives the digests of cpu-blas for the schemes it runs
    import ozaki
    eng = ozaki.get_engine(engine) if engine in ozaki.available_engines() else None
    if eng is None or not eng.available():
        pytest.skip(f"{engine} is not available: {getattr(eng, 'reason', 'not installed')}")
    want = json.loads(GOLDEN.read_text())["emulated"]
    A, B = _operands(1, 70, 90, 50)
    checked = 0
    for scheme in eng.schemes:
        for mode in ozaki.MODES:
            for count in ("auto", 7):
                C, info = ozaki.dgemm(A, B, scheme=scheme, mode=mode, engine=engine,
                                      num_moduli=count, bounds=True)
                key = f"dgemm/{scheme}/{mode}/cpu-blas/{count}"
                assert _digest(C) == want[key], key
                assert _digest(info.error_bound) == want[key + "/bound"], key
                checked += 1
    assert checked >= 4
