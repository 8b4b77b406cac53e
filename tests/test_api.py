"""The public surface: arguments, errors, BLAS form, info, workspace, the main job."""

import subprocess
import sys

import numpy as np
import pytest

import ozaki
from ozaki.core.workspace import set_workspace_limit, workspace, workspace_limit
from validation.reference import exact_matmul, test_matrix


@pytest.fixture
def AB(rng):
    return test_matrix(7, 33, 1.0, rng), test_matrix(33, 5, 1.0, rng)


def test_public_surface():
    assert set(ozaki.__all__) == {"dgemm", "gemm", "zgemm", "matmul", "prepare",
                                  "PreparedOperand", "available_engines", "workspace_bytes",
                                  "OzakiInfo", "CertificationError", "MODULI_VERSION",
                                  "exact_gemms", "auto_num_moduli", "SCHEMES", "MODES",
                                  "PHASES", "available_backends", "set_workers", "get_workers",
                                  "resolve_options", "Resolved", "get_engine", "Engine",
                                  "moduli", "gemms_per_modulus", "set_small_products",
                                  "set_scheme", "get_scheme", "emulated_options", "set_backend"}
    assert ozaki.MODULI_VERSION == 2


@pytest.mark.slow
def test_import_is_light_and_compiles_nothing():
    # ozaki's phases import no numba; the CPU backend loads it at its first product
    code = ("import sys, time; t = time.perf_counter(); import ozaki; "
            "print(time.perf_counter() - t, 'numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    seconds, numba = out.stdout.split()
    assert numba == "False"
    assert float(seconds) < 3.0  # 0.17 s warm on the development machine; CI is slower


def test_backends_by_name_and_object():
    A, B = np.arange(6.0).reshape(2, 3), np.ones((3, 2))
    assert ozaki.available_backends() == ["cpu", "numpy"]
    from ozaki.backends import get_backend
    cpu = get_backend("cpu")
    assert get_backend() is cpu and get_backend(cpu) is cpu
    assert np.array_equal(ozaki.dgemm(A, B, backend=cpu), A @ B)
    assert ozaki.dgemm(A, B, backend="numpy", return_info=True)[1].backend == "numpy"
    assert ozaki.dgemm(A, B, return_info=True)[1].backend == "cpu"
    with pytest.raises(ValueError, match=r"backend must be one of \['cpu', 'numpy'\]"):
        ozaki.dgemm(A, B, backend="gpu")
    with pytest.raises(TypeError, match="implementing ozaki.core.backend.Backend"):
        ozaki.dgemm(A, B, backend=object())


def test_set_backend_is_the_calling_threads_default():
    import threading
    from ozaki.backends import get_backend
    seen = []
    with ozaki.set_backend("numpy"):
        assert get_backend().name == "numpy" and get_backend("cpu").name == "cpu"
        t = threading.Thread(target=lambda: seen.append(get_backend().name))
        t.start()
        t.join()
        assert ozaki.dgemm(np.eye(3), np.eye(3))[0, 0] == 1.0
    assert get_backend().name == "cpu" and seen == ["cpu"]
    with pytest.raises(ValueError, match="backend must be one of"):
        with ozaki.set_backend("gpu"):
            pass


def test_scheme_facts_and_option_checks():
    assert ozaki.moduli("int8") == tuple(sorted(ozaki.moduli("int8"), reverse=True))
    assert len(ozaki.moduli("fp64")) == 20 and all(isinstance(p, int) for p in ozaki.moduli("fp8"))
    assert ozaki.gemms_per_modulus("fp8", "cpu-fp8") == 3
    assert ozaki.gemms_per_modulus("int8", "cpu-int8") == 1
    r = ozaki.resolve_options(engine="cpu-int8")
    assert (r.scheme, r.num_moduli, r.mode, r.engine.name) == ("int8", "auto", "accurate",
                                                               "cpu-int8")
    assert isinstance(ozaki.get_engine("cpu-blas"), ozaki.Engine)
    with pytest.raises(ValueError, match="scheme must be one of"):
        ozaki.moduli("fp16")
    with pytest.raises(ValueError, match="does not run scheme 'int8'"):
        ozaki.resolve_options(scheme="int8", engine="cpu-fp8")


def test_set_workers_is_scoped_to_the_calling_thread():
    import threading
    outside = ozaki.get_workers()
    seen = []
    with ozaki.set_workers(1):
        assert ozaki.get_workers() == 1
        t = threading.Thread(target=lambda: seen.append(ozaki.get_workers()))
        t.start()
        t.join()
        assert np.array_equal(ozaki.dgemm(np.eye(3), np.eye(3)), np.eye(3))
    assert ozaki.get_workers() == outside and seen == [outside]
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="workers must be a positive integer"):
            with ozaki.set_workers(bad):
                pass


@pytest.mark.slow
def test_import_is_light():
    code = ("import sys, ozaki; bad = [m for m in ('sympy', 'matplotlib', 'tqdm', 'tme_model') "
            "if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(scheme="fp16"), ValueError, "scheme must be one of"),
    (dict(mode="exact"), ValueError, "mode must be one of"),
    (dict(engine="gpu"), ValueError, "engine must be one of"),
    (dict(num_moduli=1, scheme="fp64"), ValueError, r"num_moduli for scheme 'fp64' must be in \[2, 20\]"),
    (dict(num_moduli=21, scheme="int8"), ValueError, "must be in"),
    (dict(num_moduli="many"), ValueError, "num_moduli must be 'auto'"),
    (dict(num_moduli=2.5), TypeError, "num_moduli must be 'auto' or an int"),
    (dict(num_moduli=True), TypeError, "num_moduli"),
    (dict(scheme="int8", engine="cpu-fp8"), ValueError, "does not run scheme 'int8'"),
])
def test_bad_arguments(AB, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        ozaki.dgemm(*AB, **kwargs)


def test_bad_operands(AB):
    A, B = AB
    with pytest.raises(ValueError, match="A must be 2-D"):
        ozaki.dgemm(A[0], B)
    with pytest.raises(ValueError, match="B must be 2-D"):
        ozaki.dgemm(A, B[None])
    with pytest.raises(ValueError, match="inner dimensions differ"):
        ozaki.dgemm(A, B[:-1])
    with pytest.raises(TypeError, match="A is complex: use ozaki.zgemm"):
        ozaki.dgemm(A + 0j, B)
    with pytest.raises(TypeError, match="B must be a real or complex numeric array"):
        ozaki.dgemm(A, B.astype(str))


def test_dtypes_and_layouts_agree(AB):
    A, B = AB
    want = ozaki.dgemm(A, B)
    assert np.array_equal(ozaki.dgemm(np.asfortranarray(A), np.asfortranarray(B)), want)
    big = np.zeros((14, 66))
    big[::2, ::2] = A
    assert np.array_equal(ozaki.dgemm(big[::2, ::2], B), want)
    assert np.array_equal(ozaki.dgemm(A.tolist(), B.tolist()), want)
    Ai = np.arange(12, dtype=np.int32).reshape(3, 4)
    Bf = np.linspace(-1, 1, 8, dtype=np.float32).reshape(4, 2)
    C = ozaki.dgemm(Ai, Bf)
    assert C.dtype == np.float64
    assert np.array_equal(C, exact_matmul(Ai.astype(float), Bf.astype(float)))


def test_inputs_never_modified(AB):
    A, B = AB
    A0, B0 = A.copy(), B.copy()
    C0 = np.ones((7, 5))
    ozaki.gemm(A, B, C0, alpha=3.0, beta=-2.0, mode="fast")
    ozaki.dgemm(A, B, engine="cpu-fp8")
    assert np.array_equal(A, A0) and np.array_equal(B, B0) and np.all(C0 == 1)


def test_gemm_blas_form(AB, rng):
    A, B = AB
    C0 = rng.standard_normal((7, 5))
    X = ozaki.dgemm(A, B)
    got = ozaki.gemm(A.T.copy(), B.T.copy(), C0, alpha=2.0, beta=0.5, trans_a=True, trans_b=True)
    assert np.array_equal(got, 2.0 * X + 0.5 * C0)
    assert np.array_equal(ozaki.gemm(A, B, np.full((7, 5), np.nan)), X)  # beta = 0 never reads C
    assert np.array_equal(ozaki.gemm(A, B, C0, alpha=0.0, beta=1.0), C0)
    with pytest.raises(ValueError, match="C is required"):
        ozaki.gemm(A, B, beta=1.0)
    with pytest.raises(ValueError, match="C must have shape"):
        ozaki.gemm(A, B, C0.T, beta=1.0)


def test_out_argument(AB):
    A, B = AB
    out = np.empty((7, 5))
    C = ozaki.dgemm(A, B, out=out)
    assert C is out and np.array_equal(out, ozaki.dgemm(A, B))
    F = np.empty((7, 5), order="F")
    assert ozaki.dgemm(A, B, out=F) is F and np.array_equal(F, out)
    with pytest.raises(ValueError, match="out must be a float64"):
        ozaki.dgemm(A, B, out=np.empty((5, 7)))
    buf = np.zeros((7, 40))
    buf[:, :33] = A
    with pytest.raises(ValueError, match="out may not overlap A"):
        ozaki.dgemm(buf[:, :33], B, out=buf[:, 30:35])
    # interleaved but disjoint (the trailing block beside its panel): accepted
    assert ozaki.dgemm(buf[:, :33], B, out=buf[:, 33:38]) is not None
    assert np.array_equal(buf[:, 33:38], out) and np.array_equal(buf[:, :33], A)


def test_scaled_sum_in_place_keeps_the_bits(AB):
    """``alpha A B + beta C`` into ``out`` (``out`` may be ``C``) has the bits of
    ``fl(fl(alpha X) + fl(beta C))`` on fresh temporaries."""
    A, B = AB
    X = ozaki.dgemm(A, B)
    rng = np.random.default_rng(3)
    C = rng.standard_normal((7, 5))
    C[0, :3] = [np.inf, -0.0, np.nan]
    for alpha, beta in ((-1.0, 1.0), (0.3, -2.5), (1.0, 1.0), (2.0, 0.0), (-1.0, 1j)):
        with np.errstate(all="ignore"):
            want = X * alpha + beta * C if beta != 0 else X * alpha
        with np.errstate(all="ignore"):
            got = ozaki.gemm(A, B, C, alpha=alpha, beta=beta)
        np.testing.assert_array_equal(got, want)
        for part in ("real", "imag"):
            assert np.array_equal(np.signbit(getattr(got, part)), np.signbit(getattr(want, part)))
        if np.iscomplexobj(want):
            continue
        D = C.copy()
        with np.errstate(all="ignore"):
            assert ozaki.gemm(A, B, D, alpha=alpha, beta=beta, out=D) is D
        np.testing.assert_array_equal(D, want)
    Z = C.astype(complex)
    Z[1, 1] = complex(np.inf, 1.0)  # (1 + 0j) * (inf + 1j) = inf + nan j: kept as such
    with np.errstate(all="ignore"):
        want = X * 1.0 + 1.0 * Z
        got = ozaki.gemm(A, B, Z, beta=1.0)
    assert np.isnan(want[1, 1].imag)
    np.testing.assert_array_equal(got, want)


def test_info_and_workspace(AB):
    A, B = AB
    for scheme, typical in (("int8", 16), ("fp8", 13), ("fp64", 6)):
        C, info = ozaki.dgemm(A, B, scheme=scheme, engine="cpu-blas", return_info=True)
        assert isinstance(info, ozaki.OzakiInfo)
        assert (info.scheme, info.mode, info.engine) == (scheme, "accurate", "cpu-blas")
        # the refinement's FP64 bound GEMMs: G' alone, as the operands hold no zero
        # (U' then follows from G' and line sums)
        assert np.all(A != 0) and np.all(B != 0)
        refined = 1 if info.refined_block != (0, 0) else 0
        assert info.gemms == info.num_moduli + 1 + refined
        assert abs(info.num_moduli - typical) <= 2
        assert info.certified and info.bound_kind == "componentwise"
        assert set(info.seconds) == {"scaling", "residues", "products", "reconstruction"}
        assert all(v >= 0 for v in info.seconds.values())
        assert info.workspace_bytes == ozaki.workspace_bytes(
            7, 5, 33, scheme=scheme, engine="cpu-blas", num_moduli=info.num_moduli)
    _, info = ozaki.dgemm(A, B, mode="fast", num_moduli=9, scheme="fp64", return_info=True)
    assert info.gemms == 9 and info.num_moduli == 9
    _, info = ozaki.dgemm(A, B, scheme="fp8", engine="cpu-fp8", mode="fast", return_info=True)
    assert info.gemms == 3 * info.num_moduli
    # fp64, 6 moduli, n x n: two FP64 residue planes and six int32 planes; the product
    # plane the store pass reads is the result's own memory
    n = 4096
    assert ozaki.workspace_bytes(n, n, n, num_moduli=6) == (2 * 8 + 6 * 4) * n * n
    # a wide product with a small A runs in column blocks: a block's share only
    A, B = np.ones((8, 8)), np.ones((8, 70000))
    _, info = ozaki.dgemm(A, B, scheme="fp64", return_info=True)
    assert info.workspace_bytes == ozaki.workspace_bytes(8, 70000, 8,
                                                         num_moduli=info.num_moduli)
    whole = 8 * (8 * 8 + 2 * 8 * 70000) + 6 * 8 * 70000 * 4  # planes and store of one pass
    assert info.num_moduli == 6 and info.workspace_bytes < whole
    with pytest.raises(ValueError, match="m must be a non-negative integer"):
        ozaki.workspace_bytes(-1, 2, 3)


def test_workspace_is_reused_and_capped(AB):
    A, B = AB
    ozaki.dgemm(A, B)
    ws = workspace()
    before = {k: v.ctypes.data for k, v in ws._buffers.items()}
    ozaki.dgemm(A, B)
    assert {k: v.ctypes.data for k, v in ws._buffers.items()} == before
    old = workspace_limit()
    try:
        set_workspace_limit(0)
        ws.clear()
        C = ozaki.dgemm(A, B)
        assert ws.nbytes == 0 and np.array_equal(C, ozaki.dgemm(A, B))
    finally:
        set_workspace_limit(old)
    with pytest.raises(ValueError, match="nbytes"):
        set_workspace_limit(-5)


@pytest.mark.slow
def test_main_job_runs_and_reports_every_scheme():
    out = subprocess.run([sys.executable, "-m", "ozaki", "--n", "96", "--sample", "20",
                          "--repeat", "1"], capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    header = next(ln for ln in lines if ln.startswith("scheme "))
    assert header.split()[:5] == ["scheme", "moduli", "mode", "engine", "GEMMs"]
    table = lines[lines.index(header):]
    table = table[:table.index("")]  # header, rule, numpy, one row per scheme and mode
    assert all(len(ln) == len(header) for ln in table)  # aligned: every row as wide
    rows = [ln.split() for ln in table[3:]]
    # every scheme of ozaki.SCHEMES (fp64 first, then the others in their order), both modes
    schemes = ("fp64",) + tuple(s for s in ozaki.SCHEMES if s != "fp64")
    assert sorted(schemes) == sorted(ozaki.SCHEMES) and "int7" in schemes
    assert [(r[0], r[2]) for r in rows] == [(s, m) for s in schemes
                                            for m in ("accurate", "fast")]
    # the engine column: the engine engine="auto" takes for that scheme on this machine
    assert [r[3] for r in rows] == [ozaki.resolve_options(r[0], "auto", r[2], "auto").engine.name
                                    for r in rows]
    assert all(float(r[5]) < 1e-12 for r in rows)  # max relative error column
    assert "exact values on 20 sampled entries" in out
    # 96**3 <= 2**24 terms: every row took the compensated path, and the footnote says so
    assert all(r[1] == "0" and r[4] == "0" for r in rows)
    text = " ".join(out.split())  # the footnote's paragraphs are wrapped
    assert "took the compensated path" in text
    engines = ", ".join(dict.fromkeys(r[3] for r in rows))
    assert f'(engine="auto", info.engine): {engines}.' in text
    assert "cpu-blas: one FP64 GEMM per modulus" not in text
    auto = [ozaki.resolve_options("auto", "auto", m, "auto") for m in ("accurate", "fast")]
    assert (f'scheme="auto" on this machine: accurate mode {auto[0].scheme} on '
            f"{auto[0].engine.name}, fast mode {auto[1].scheme} on {auto[1].engine.name}."
            in text)


@pytest.mark.parametrize("name", ["ozaki", "ozaki.api.facts", "ozaki.api.front",
                                  "ozaki.backends", "ozaki.backends.engines"])
def test_docstring_examples(name):
    import doctest
    import importlib
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.compensated
def test_small_products_path_is_scoped_to_the_calling_thread():
    import threading
    A, B = np.arange(12.0).reshape(3, 4), np.ones((4, 2))
    paths = []
    with ozaki.set_small_products(False):
        _, info = ozaki.dgemm(A, B, return_info=True)
        t = threading.Thread(target=lambda: paths.append(
            ozaki.dgemm(A, B, return_info=True)[1].path))
        t.start()
        t.join()
    _, after = ozaki.dgemm(A, B, return_info=True)
    assert (info.path, paths, after.path) == ("emulated", ["compensated"], "compensated")
    with pytest.raises(TypeError, match="True or False"):
        with ozaki.set_small_products("no"):
            pass


def test_prepared_operands_serve_every_backend(rng=np.random.default_rng(5)):
    A, B = rng.standard_normal((6, 300)), rng.standard_normal((300, 5))
    want = ozaki.dgemm(A, B)
    P = ozaki.prepare(A, backend="numpy")  # its data formed now, on numpy
    assert [be.name for _, be in P._prepared] == ["numpy"]
    assert np.array_equal(ozaki.dgemm(P, B, backend="numpy"), want)  # the same bits
    assert np.array_equal(ozaki.dgemm(P, B), want)  # cpu forms and keeps its own
    assert sorted(be.name for _, be in P._prepared) == ["cpu", "numpy"]
    assert not ozaki.prepare(A)._prepared  # lazy without a backend
    with pytest.raises(ValueError, match="backend must be one of"):
        ozaki.prepare(A, backend="gpu")
