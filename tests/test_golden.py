"""Golden digests: the bits of fixed products and transforms, the same on every machine.

The results depend only on the inputs and the options (moduli tables of version
``ozaki.MODULI_VERSION``), never on the machine, the thread count or the engine. This
file pins them: SHA-256 digests of results computed from seeded inputs, stored in
``golden_digests.json`` beside it. A digest that changes is a changed result bit: on a
new machine, a reproducibility bug; after a code change, a change an issue must have
asked for (then regenerate with ``python tests/test_golden.py --update`` and say so).

Every backend must reproduce the same digests: the checks run on ``cpu`` (the default)
and on ``numpy`` (the pure-NumPy reference), which the sets' calls then get by default
(``ozaki.set_backend``). The digests are written from ``cpu``.
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


def emulated() -> dict[str, str]:
    """The emulated path: every scheme, mode and engine, counts auto and explicit."""
    import ozaki
    out = {}
    A, B = _operands(1, 70, 90, 50)
    for scheme in ozaki.SCHEMES:
        engines = ["cpu-blas"] + ([f"cpu-{scheme}"] if scheme != "fp64" else [])
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
    S = A @ A.T + 150 * np.eye(150)
    out["cho_factor"] = _digest(linalg.cho_factor(S, block_size=32)[0])
    out["solve_triangular"] = _digest(linalg.solve_triangular(np.triu(S), A, block_size=32))
    return out


SETS = {"emulated": emulated, "compensated": compensated, "transforms": transforms,
        "factorisations": factorisations}


def _compute() -> dict[str, dict[str, str]]:
    from ozaki.core import compensated as path
    saved = path.SMALL_WORK
    try:
        path.SMALL_WORK = 0
        got = {"emulated": emulated(), "transforms": transforms()}
        path.SMALL_WORK = saved
        got["compensated"] = compensated()
        got["factorisations"] = factorisations()
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
    if name in ("compensated", "factorisations"):
        monkeypatch.setattr(path, "SMALL_WORK", 2 ** 24)  # the real threshold
    want = json.loads(GOLDEN.read_text())[name]
    given = _recorded(monkeypatch)
    # the sets call the public functions (the transforms and factorisations through
    # them) without naming a backend: they get the thread's default
    with ozaki.set_backend(backend):
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
