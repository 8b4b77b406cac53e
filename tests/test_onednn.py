"""The ``cpu-onednn`` engine: exact on every instruction set, the same bits as every engine.

Products are compared with int64 references at the extremes of the int8 range
(where oneDNN's non-VNNI kernels saturate a naive encoding), over shapes, layouts,
stacks and k-blocks; whole calls are compared bitwise with ``cpu-blas``. The
non-VNNI kernels are exercised on a VNNI machine by ``ONEDNN_MAX_CPU_ISA`` in a
subprocess. Tests that need the library skip where it is not installed.
"""

import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import fft
import ozaki
from ozaki.backends import onednn, onednn_library
from ozaki.backends.cpu import parallel
from ozaki.backends.engines import ENGINES, BlasEngine, get_engine
from ozaki.backends.onednn import INSTALL_HINT, OneDNNEngine
from validation.reference import test_matrix

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PROBE = OneDNNEngine()
AVAILABLE = _PROBE.available()
needs_onednn = pytest.mark.skipif(not AVAILABLE, reason=f"cpu-onednn: {_PROBE.reason}")
ENCODINGS = ["auto", "split"]


def bits(C):
    return np.ascontiguousarray(C).view(np.int64)


def exact(X, Y):
    return np.matmul(np.asarray(X).astype(np.int64), np.asarray(Y).astype(np.int64))


def _python(code: str, env: dict | None = None, timeout: float = 120) -> dict:
    """Run ``code`` in a fresh interpreter from the checkout; its last stdout line is JSON."""
    full = dict(os.environ, **(env or {}))
    full["PYTHONPATH"] = ROOT + os.pathsep + full.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env=full, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- registration, availability, loading ------------------------------------------

def test_registered_with_the_int8_engine_semantics():
    assert ENGINES["cpu-onednn"] is OneDNNEngine
    eng = OneDNNEngine()
    assert eng.operand_max == 128 and eng.accumulator_max == 2 ** 31 - 1
    assert eng.schemes == ("int8", "fp8", "int7") and eng.preferred_scheme == "int8"
    with pytest.raises(ValueError, match="encoding"):
        OneDNNEngine(encoding="fast")
    with pytest.raises(ValueError, match="max_kblock"):
        OneDNNEngine(max_kblock=0)
    assert repr(OneDNNEngine(max_kblock=5, encoding="split")) == \
        "OneDNNEngine(max_kblock=5, encoding='split')"


def test_unavailable_with_the_reason_when_the_library_is_missing(monkeypatch):
    missing = "/nonexistent/ozaki-test/libdnnl.so.3"
    # the loader reads the library module's finder (onednn re-exports it for imports)
    monkeypatch.setattr(onednn_library, "library_path", lambda: missing)
    eng = OneDNNEngine()
    assert not eng.available()
    assert missing in eng.reason and INSTALL_HINT in eng.reason
    assert "cpu-onednn" not in ozaki.available_engines()
    with pytest.raises(ValueError, match=r"not available.*pip install 'ozaki-emu\[onednn\]'"):
        get_engine("cpu-onednn", "int8")
    with pytest.raises(ValueError, match=r"pip install 'ozaki-emu\[onednn\]'"):
        ozaki.dgemm(np.eye(3), np.eye(3), scheme="int8", engine="cpu-onednn")
    with pytest.raises(onednn.OneDNNUnavailable, match="could not be loaded"):
        onednn.library_info()
    # not installed at all
    monkeypatch.setattr(onednn_library, "library_path", lambda: None)
    assert not eng.available() and "not installed" in eng.reason and INSTALL_HINT in eng.reason


@pytest.mark.slow
def test_import_does_not_load_the_library():
    got = _python("""
        import json, ctypes
        def mapped():
            return any("libdnnl" in line for line in open("/proc/self/maps"))
        import ozaki, fft
        from ozaki.backends import onednn
        before = mapped()
        ok = onednn.OneDNNEngine().available()
        print(json.dumps({"before": before, "available": ok, "after": mapped()}))
    """)
    assert got["before"] is False
    assert got["after"] is got["available"]


@needs_onednn
def test_library_info_and_blocks():
    info = onednn.library_info()
    assert info["encoding"] == ("offset" if info["vnni"] else "split")
    assert os.path.exists(info["path"]) and info["version"].startswith("3.")
    split, auto = OneDNNEngine(encoding="split"), OneDNNEngine()
    assert split.kblock(128, 128) == 131071 == (2 ** 31 - 1) // (128 * 128)
    assert split.gemms_per_call == 2
    assert auto.kblock(128, 128) == (65793 if info["vnni"] else 131071)
    assert auto.gemms_per_call == (1 if info["vnni"] else 2)
    assert OneDNNEngine(max_kblock=7).kblock(16, 16) == 7
    for eng in (split, auto):
        for k in (0, 1, 65793, 65794, 131071, 131072, 300000):
            blocks = eng.blocks(k, 128, 128)
            assert sum(length for length, _ in blocks) == k
            assert all(b <= eng.accumulator_max for _, b in blocks)
    if info["vnni"]:
        assert OneDNNEngine(encoding="offset").available()


# --- exact products ---------------------------------------------------------------

@needs_onednn
@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("fill", ["min", "max", "alternate", "negative", "mixed"])
def test_exact_at_the_extremes(encoding, fill, rng):
    eng = OneDNNEngine(encoding=encoding)
    m, k, n = 5, 1000, 7
    if fill == "min":      # every entry -128: every product 2**14
        X, Y = np.full((m, k), -128.0), np.full((k, n), -128.0)
    elif fill == "max":    # 127 against -128: u = 255 under the naive encoding
        X, Y = np.full((m, k), 127.0), np.full((k, n), -128.0)
    elif fill == "alternate":
        X = np.where(np.arange(k) % 2, 127.0, -128.0) * np.ones((m, 1))
        Y = np.where(np.arange(k)[:, None] % 2, -128.0, 127.0) * np.ones((1, n))
    elif fill == "negative":
        X, Y = -rng.integers(1, 129, (m, k)).astype(float), -rng.integers(1, 129, (k, n)) * 1.0
    else:
        X = rng.choice([-128.0, 127.0, -1.0, 0.0, 1.0], (m, k))
        Y = rng.choice([-128.0, 127.0, -127.0, 0.0], (k, n))
    assert np.array_equal(eng.matmul(X, Y, 128, 128), exact(X, Y))


@needs_onednn
@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("k", [65793, 65794, 131071, 131072])
def test_exact_for_k_up_to_2_17(encoding, k):
    """Thin products at and beyond each encoding's INT32 block: sums past 2**31."""
    eng = OneDNNEngine(encoding=encoding)
    X = np.full((2, k), -128.0)
    X[1, ::3] = 127.0
    Y = np.full((k, 3), -128.0)
    Y[::5, 1] = 127.0
    want = exact(X, Y)
    assert want.max() == k * 2 ** 14  # beyond int32 at k = 2**17
    C = eng.matmul(X, Y, 128, 128)
    assert C.dtype == np.float64 and np.array_equal(C, want)


@needs_onednn
@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("m, k, n", [(1, 1, 1), (1, 3, 1), (3, 17, 1), (1, 63, 65), (17, 65, 3),
                                     (63, 1, 17), (65, 129, 63), (3, 1000, 1), (1, 1000, 3),
                                     (33, 257, 31)])
def test_exact_on_shapes_off_every_vector_width(encoding, m, k, n, rng):
    eng = OneDNNEngine(encoding=encoding)
    X = rng.integers(-128, 128, (m, k)).astype(float)
    Y = rng.integers(-128, 128, (k, n)).astype(float)
    assert np.array_equal(eng.matmul(X, Y, 128, 128), exact(X, Y))


@needs_onednn
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_exact_on_transposed_fortran_strided_and_other_dtypes(encoding, rng):
    eng = OneDNNEngine(encoding=encoding)
    base_x = rng.integers(-128, 128, (70, 90)).astype(float)
    base_y = rng.integers(-128, 128, (90, 80)).astype(float)
    layouts = [
        (base_x.T.copy().T, base_y),                        # C copies
        (np.asfortranarray(base_x), np.asfortranarray(base_y)),
        (base_y.T, base_x.T),                              # transposed views
        (base_x[::2, ::3], base_y[::3, ::2]),              # strided views
        (base_x[::-1, ::-1], base_y[::-1, :]),             # negative strides
        (base_x.astype(np.float32), base_y.astype(np.float32)),
        (base_x.astype(np.int16), base_y.astype(np.int64)),
    ]
    for X, Y in layouts:
        assert np.array_equal(eng.matmul(X, Y, 128, 128), exact(X, Y)), (X.strides, X.dtype)


@needs_onednn
@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("xs, ys", [((4, 17, 65), (4, 65, 9)), ((4, 17, 65), (65, 9)),
                                    ((17, 65), (3, 65, 9)), ((1, 17, 65), (3, 65, 9)),
                                    ((3, 17, 65), (1, 65, 9)), ((2, 1, 5, 33), (1, 3, 33, 7)),
                                    ((2, 3, 5, 4), (2, 3, 4, 6)), ((3, 1, 70, 9), (1, 2, 9, 80))])
def test_exact_on_stacks_with_broadcasting(encoding, xs, ys, rng):
    eng = OneDNNEngine(encoding=encoding)
    X = rng.integers(-128, 128, xs).astype(float)
    Y = rng.integers(-128, 128, ys).astype(float)
    want = exact(X, Y)
    C = eng.matmul(X, Y, 128, 128)
    assert C.shape == want.shape and np.array_equal(C, want)


@needs_onednn
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_out_given_strided_float32_and_k_blocks(encoding, rng):
    eng = OneDNNEngine(encoding=encoding)
    X = rng.integers(-128, 128, (2, 3, 40)).astype(float)
    Y = rng.integers(-128, 128, (1, 40, 5)).astype(float)
    want = exact(X, Y)
    wide = np.full((2, 3, 10), np.nan)
    view = wide[..., ::2]
    assert eng.matmul(X, Y, 128, 128, out=view) is view
    assert np.array_equal(view, want) and np.isnan(wide[..., 1::2]).all()
    # blocks of 7 products, added into the strided out
    view[...] = np.nan
    assert np.array_equal(OneDNNEngine(max_kblock=7, encoding=encoding)
                          .matmul(X, Y, 128, 128, out=view), want)
    # a float32 out on its limit: k amax bmax = 2**24
    amax = 127
    k = 2 ** 24 // (amax * amax)
    X = rng.choice([-amax, amax], size=(2, 3, k)).astype(np.float64)
    Y = rng.choice([-amax, amax], size=(1, k, 4)).astype(np.float64)
    Y[0, :, 0] = np.sign(X[0, 0]) * amax
    want = exact(X, Y)
    assert want[0, 0, 0] == k * amax * amax
    out = np.full((2, 3, 8), np.nan, np.float32)
    assert eng.matmul(X, Y, amax, amax, out=out[..., ::2]).dtype == np.float32
    assert np.array_equal(out[..., ::2], want) and np.isnan(out[..., 1::2]).all()


@needs_onednn
@pytest.mark.parametrize("bad", [128.0, -129.0, 0.5, np.nan, np.inf, 1e300])
def test_operands_outside_int8_are_refused(bad):
    eng = OneDNNEngine()
    X = np.zeros((3, 4))
    X[1, 2] = bad
    with pytest.raises(ValueError, match="int8 range"):
        eng.matmul(X, np.ones((4, 2)), 128, 1)
    with pytest.raises(ValueError, match="int8 range"):
        eng.matmul(np.ones((2, 3)), X, 1, 128)


@pytest.mark.parametrize("name", ["cpu-onednn", "cpu-int8", "cpu-blas", "cpu-fp8"])
def test_engines_refuse_mismatched_shapes_and_complex_operands(name):
    """Every engine checks what it is given before any kernel reads it (cpu-onednn
    once read past a short ``Y`` and crashed): the inner dimensions, ``out``'s shape,
    real operands; nothing is written."""
    eng = get_engine(name)
    if not eng.available():
        pytest.skip(f"{name} is not available here")
    X, Y = np.ones((2, 5)), np.arange(18.0).reshape(6, 3)
    with pytest.raises(ValueError, match="must share k"):
        eng.matmul(X, Y, 1, 16)
    with pytest.raises(ValueError, match="must share k"):
        eng.matmul(np.ones((1, 60000), np.int8), np.ones((1, 4096), np.int8), 1, 1)
    out = np.full((3, 2), 7.0)  # the size of the (2, 3) product, not its shape
    with pytest.raises(ValueError, match=r"out must have the product's shape \(2, 3\)"):
        eng.matmul(X[:, :3], Y[:3] % 16, 1, 16, out=out)
    assert (out == 7.0).all()
    for bad in (np.ones((2, 3), complex), np.ones((2, 3), object), np.ones(3)):
        with pytest.raises(ValueError, match="X must be a real"):
            eng.matmul(bad, np.ones((3, 2)), 1, 1)


@needs_onednn
def test_half_precision_operands_are_exact_and_extended_ones_refused():
    eng = OneDNNEngine()
    X = np.array([[-128.0, 127.0, 3.0]], np.float16)
    Y = np.array([[1.0, -128.0], [127.0, 5.0], [-7.0, 0.0]], np.float16)
    assert np.array_equal(eng.matmul(X, Y, 128, 128), exact(X, Y))
    if np.finfo(np.longdouble).nmant > 52:  # a wider type: refused, not rounded first
        with pytest.raises(ValueError, match="float16, float32 or float64"):
            eng.matmul(X.astype(np.longdouble), Y, 128, 128)


@needs_onednn
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_int32_out_whose_single_rows_have_any_stride(encoding, rng):
    """numpy calls a stack of single rows C-ordered whatever their row stride; oneDNN
    reads it as a leading dimension (it once refused the call)."""
    X = rng.integers(-128, 128, (2, 1, 40)).astype(np.int8)
    Y = rng.integers(-128, 128, (2, 40, 5)).astype(np.int8)
    out = np.zeros((2, 5, 1), np.int32).transpose(0, 2, 1)  # strides (20, 4, 4)
    assert out.flags.c_contiguous and out.strides[1] < 4 * out.shape[2]
    OneDNNEngine(encoding=encoding).matmul(X, Y, 128, 128, out=out)
    assert np.array_equal(out, exact(X, Y))


#: Source run by the fork tests' scripts: ``child(q)`` in a forked process, waited for
#: ``WAIT`` seconds; ``hung`` tells whether it had to be killed.
_FORK_CHILD = """
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=child, args=(q,))
    p.start()
    p.join(WAIT)
    hung = p.is_alive()
    if hung:
        p.kill()
"""


_FORK_WHILE_LOADING = """
    import json, sys, multiprocessing as mp
    from ozaki.backends import onednn_library, onednn_passes
    what = sys.argv[1]
    first = {"library": onednn_library.load_library, "passes": onednn_passes.compiled}[what]
    lock = onednn_library._load_lock if what == "library" else onednn_passes._kernels_lock
    lock.acquire()  # as a thread does while it loads (or compiles) at the first use
    def child(q):
        first()
        q.put("done")
""" + _FORK_CHILD.replace("WAIT", "120") + """
    lock.release()
    print(json.dumps({"hung": hung, "code": p.exitcode,
                      "got": None if hung else q.get(timeout=5)}))
"""


@needs_onednn
@pytest.mark.slow
@pytest.mark.parametrize("what", ["library", "passes"])
def test_a_child_forked_during_the_first_load_loads_itself(what):
    """A child forked while another thread holds the load (or compile) lock starts with
    a free lock and loads (compiles) itself: it once waited on the parent's for ever."""
    got = _python(_FORK_WHILE_LOADING.replace("sys.argv[1]", repr(what)), timeout=240)
    assert not got["hung"] and got["code"] == 0 and got["got"] == "done", got


@needs_onednn
def test_empty_and_zero_k():
    eng = OneDNNEngine()
    assert np.array_equal(eng.matmul(np.zeros((3, 0)), np.zeros((0, 2)), 1, 1), np.zeros((3, 2)))
    assert eng.matmul(np.zeros((0, 4)), np.zeros((4, 2)), 1, 1).shape == (0, 2)
    assert eng.matmul(np.zeros((0, 3, 4)), np.zeros((4, 2)), 1, 1).shape == (0, 3, 2)


# --- threads ----------------------------------------------------------------------

@needs_onednn
def test_thread_counts_and_concurrent_callers_give_the_same_bits(rng):
    lib = onednn_library.load_library()
    X = rng.integers(-128, 128, (2, 150, 300)).astype(float)
    Y = rng.integers(-128, 128, (300, 170)).astype(float)
    want = exact(X, Y)
    before = lib.omp_get()
    for threads in (1, 2, 3):
        with parallel.limit(threads):
            assert np.array_equal(OneDNNEngine().matmul(X, Y, 128, 128), want)
    assert lib.omp_get() == before  # the per-call count is restored
    errors, results = [], []

    def work():
        try:
            for _ in range(3):
                with parallel.limit(1):  # this thread's count only
                    results.append(OneDNNEngine().matmul(X, Y, 128, 128))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for _ in range(3):
        results.append(OneDNNEngine(encoding="split").matmul(X, Y, 128, 128))
    for t in threads:
        t.join()
    assert not errors and len(results) == 12
    assert all(np.array_equal(C, want) for C in results)
    assert lib.omp_get() == before


# --- the same bits as every other engine -------------------------------------------

def _same(f, **kw):
    """``f(engine=...)`` on cpu-onednn (both encodings) and on cpu-blas: bitwise equal."""
    ref = f(engine=BlasEngine(), **kw)
    for eng in ("cpu-onednn", OneDNNEngine(encoding="split"), OneDNNEngine(max_kblock=50)):
        got = f(engine=eng, **kw)
        if isinstance(ref, tuple):
            assert np.array_equal(bits(got[0]), bits(ref[0])), eng
            assert got[1].num_moduli == ref[1].num_moduli
            if ref[1].error_bound is not None:
                assert np.array_equal(bits(got[1].error_bound), bits(ref[1].error_bound)), eng
        else:
            assert np.array_equal(bits(got), bits(ref)), eng
    return ref


@needs_onednn
@pytest.mark.parametrize("mode", ["fast", "accurate"])
@pytest.mark.parametrize("num_moduli", [14, 20, "auto"])
@pytest.mark.parametrize("phi", [0.5, 4.0])
def test_dgemm_bits_equal_cpu_blas(mode, num_moduli, phi, rng):
    A = test_matrix(13, 300, phi, rng)
    B = test_matrix(300, 11, phi, rng)
    _same(lambda engine: ozaki.dgemm(A, B, scheme="int8", num_moduli=num_moduli, mode=mode,
                                     engine=engine, bounds=True))


@needs_onednn
@pytest.mark.parametrize("mode", ["fast", "accurate"])
def test_fp8_scheme_and_the_bound_gemm_bits_equal(mode, rng):
    A = test_matrix(9, 200, 1.0, rng)
    B = test_matrix(200, 12, 1.0, rng)
    _same(lambda engine: ozaki.dgemm(A, B, scheme="fp8", num_moduli=12, mode=mode,
                                     engine=engine, bounds=True))


@needs_onednn
def test_zgemm_matmul_special_values_and_prepared_bits_equal(rng):
    A = test_matrix(11, 70, 2.0, rng) + 1j * test_matrix(11, 70, 2.0, rng)
    B = test_matrix(70, 6, 2.0, rng) - 1j * test_matrix(70, 6, 2.0, rng)
    _same(lambda engine: ozaki.zgemm(A, B, scheme="int8", engine=engine))
    _same(lambda engine: ozaki.zgemm(A, B, scheme="int8", num_moduli=15, mode="fast",
                                     engine=engine))
    S = test_matrix(3 * 9, 40, 1.0, rng).reshape(3, 9, 40)
    T = test_matrix(40, 5, 1.0, rng)
    _same(lambda engine: ozaki.matmul(S, T, scheme="int8", engine=engine))
    _same(lambda engine: ozaki.matmul(T.T, S.transpose(0, 2, 1), scheme="int8", engine=engine))
    _same(lambda engine: ozaki.matmul(S[0, 0], T, scheme="int8", engine=engine))  # 1-D
    special = test_matrix(10, 50, 1.0, rng)
    special[1, 3], special[4, 7], special[6, 0] = np.inf, -np.inf, np.nan
    special[8] = 0.0
    special[9, :] = 1e300
    other = test_matrix(50, 8, 1.0, rng)
    other[2, 5] = np.nan
    for mode in ("fast", "accurate"):
        _same(lambda engine: ozaki.dgemm(special, other, scheme="int8", mode=mode,
                                         engine=engine))
    P = ozaki.prepare(test_matrix(12, 80, 1.0, rng))
    Q = test_matrix(80, 9, 1.0, rng)
    for _ in range(2):  # the second product reuses the kept residue planes
        _same(lambda engine: ozaki.dgemm(P, Q, scheme="int8", mode="fast", engine=engine))


@needs_onednn
@pytest.mark.parametrize("n", [16, 60])
def test_fft_bits_equal(n, rng):
    x = rng.standard_normal((3, n)) + 1j * rng.standard_normal((3, n))
    ref = fft.fft(x, plan=fft.Plan(n, scheme="int8", engine="cpu-blas"))
    got = fft.fft(x, plan=fft.Plan(n, scheme="int8", engine="cpu-onednn"))
    assert np.array_equal(bits(got.view(np.float64)), bits(ref.view(np.float64)))


# --- other instruction sets and fork ----------------------------------------------

_ISA_CHECK = """
    import json
    import numpy as np
    import ozaki
    from ozaki.backends import onednn
    from ozaki.backends.onednn import OneDNNEngine
    info = onednn.library_info()
    eng = OneDNNEngine()
    rng = np.random.default_rng(3)
    ok = True
    for X, Y in [(np.full((3, 5000), 127.0), np.full((5000, 4), -128.0)),
                 (np.full((1, 4001), 127.0), np.full((4001, 5), -128.0)),   # GEMV shapes
                 (np.full((6, 4001), -128.0), np.full((4001, 1), 127.0)),
                 (np.full((2, 131072), -128.0), np.full((131072, 3), -128.0)),
                 (rng.integers(-128, 128, (67, 301)).astype(float),
                  rng.integers(-128, 128, (301, 65)).astype(float))]:
        ok &= bool(np.array_equal(eng.matmul(X, Y, 128, 128),
                                  X.astype(np.int64) @ Y.astype(np.int64)))
    A, B = rng.standard_normal((20, 300)), rng.standard_normal((300, 9))
    same = all(np.array_equal(ozaki.dgemm(A, B, scheme="int8", mode=m, engine="cpu-onednn"),
                              ozaki.dgemm(A, B, scheme="int8", mode=m, engine="cpu-blas"))
               for m in ("fast", "accurate"))
    print(json.dumps({"info": info, "exact": ok, "same": same,
                      "offset": OneDNNEngine(encoding="offset").available()}))
"""


@needs_onednn
@pytest.mark.slow
@pytest.mark.parametrize("isa", ["SSE41", "AVX2", "AVX512_CORE", "AVX512_CORE_VNNI"])
def test_exact_on_the_kernels_of_each_instruction_set(isa):
    """``ONEDNN_MAX_CPU_ISA`` (in the child only) selects oneDNN's kernels: where they
    saturate pairs to int16 the engine must pick ``split`` and stay exact."""
    got = _python(_ISA_CHECK, env={"ONEDNN_MAX_CPU_ISA": isa})
    assert got["exact"] and got["same"], got
    info = got["info"]
    assert info["vnni"] is ("vnni" in info["isa"]), info  # a lower ISA where the CPU lacks it
    assert info["encoding"] == ("offset" if info["vnni"] else "split")
    assert got["offset"] is info["vnni"]
    if isa != "AVX512_CORE_VNNI":
        assert not info["vnni"]


_FORK = """
    import hashlib, json, multiprocessing as mp, sys
    import numpy as np
    import ozaki
    from ozaki.backends.onednn import OneDNNEngine

    def product():
        rng = np.random.default_rng(5)
        X = rng.integers(-128, 128, (2, 300, 400)).astype(float)
        Y = rng.integers(-128, 128, (400, 350)).astype(float)
        A, B = rng.standard_normal((40, 500)), rng.standard_normal((500, 30))
        C = OneDNNEngine().matmul(X, Y, 128, 128)
        D = ozaki.dgemm(A, B, scheme="int8", engine="cpu-onednn")
        return [hashlib.sha256(M.tobytes()).hexdigest() for M in (C, D)]

    def child(q):
        q.put(product())

    used_first = sys.argv[1] == "used"
    parent = product() if used_first else None  # OpenMP teams ran before the fork
""" + _FORK_CHILD.replace("WAIT", "60") + """
    got = None if hung else q.get(timeout=10)
    parent = parent or product()
    print(json.dumps({"hung": hung, "code": p.exitcode, "same": got == parent}))
"""


@needs_onednn
@pytest.mark.slow
@pytest.mark.parametrize("when", ["used", "unused"])
def test_a_forked_child_gives_the_parents_bits(when):
    """A child forked after oneDNN ran an OpenMP team would hang at its first call
    with the parent's thread count; the engine runs it on one thread there. Also
    when the parent had not used (nor loaded) the library before the fork."""
    full = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(_FORK), when],
                          capture_output=True, text=True, timeout=180, env=full, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert not got["hung"] and got["code"] == 0 and got["same"], got


# --- the integer data path: int8 planes, INT32 products --------------------------

def _int8_planes(rng, shape, fill):
    if fill == "min":
        return np.full(shape, -128, np.int8)
    if fill == "max":
        return np.full(shape, 127, np.int8)
    if fill == "alternate":
        return np.where(np.indices(shape).sum(0) % 2, 127, -128).astype(np.int8)
    return rng.integers(-128, 128, shape).astype(np.int8)


@needs_onednn
@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("fill", ["min", "max", "alternate", "random"])
def test_int8_operands_and_int32_out_are_exact(encoding, fill, rng):
    """The backend's own types: int8 planes in, INT32 out, at the int8 extremes, on
    strided, transposed and stacked layouts and in k-blocks summed in INT32."""
    eng = OneDNNEngine(encoding=encoding)
    X = _int8_planes(rng, (3, 33, 257), fill)
    Y = -_int8_planes(rng, (257, 31), fill).astype(np.int16)  # -(-128) leaves int8
    Y = np.clip(Y, -128, 127).astype(np.int8)
    want = exact(X, Y)
    X0, Y0 = X.copy(), Y.copy()
    for x, y in ((X, Y), (X[:, ::2, ::-1], Y[::-1, 1::3]), (X[0].T.copy().T, Y[:, :5]),
                 (X.transpose(0, 2, 1).copy().transpose(0, 2, 1), np.asfortranarray(Y))):
        ref = exact(x, y)
        out = np.full(ref.shape, -1, np.int32)
        assert eng.matmul(x, y, 128, 128, out=out) is out
        assert np.array_equal(out, ref)
        assert np.array_equal(eng.matmul(x, y, 128, 128), ref)  # FP64 out from int8 in
    out = np.empty(want.shape, np.int32)
    strided = np.full(want.shape[:-1] + (62,), 7, np.int32)
    for e in (OneDNNEngine(max_kblock=7, encoding=encoding), eng):
        assert np.array_equal(e.matmul(X, Y, 128, 128, out=out), want)
        e.matmul(X, Y, 128, 128, out=strided[..., ::2])
        assert np.array_equal(strided[..., ::2], want) and (strided[..., 1::2] == 7).all()
    assert np.array_equal(X, X0) and np.array_equal(Y, Y0)  # the operands are not written


@needs_onednn
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_int32_out_on_its_limit_and_refused_beyond(encoding):
    """``k amax bmax <= 2**31 - 1`` is the INT32 out's contract: at k = 131071 every
    entry -128 gives 131071 * 2**14 = 2**31 - 2**14 exactly (over two offset blocks)."""
    eng = OneDNNEngine(encoding=encoding)
    k = (2 ** 31 - 1) // 2 ** 14
    X = np.full((2, k), -128, np.int8)
    Y = np.full((k, 2), -128, np.int8)
    Y[::2, 1] = 127
    out = np.empty((2, 2), np.int32)
    assert np.array_equal(eng.matmul(X, Y, 128, 128, out=out), exact(X, Y))
    assert out[0, 0] == 2 ** 31 - 2 ** 14
    X2 = np.full((2, k + 1), -128, np.int8)
    with pytest.raises(ValueError, match="int32 out"):
        eng.matmul(X2, np.full((k + 1, 2), -128, np.int8), 128, 128, out=out)
    with pytest.raises(ValueError, match="int32 out"):  # FP64 engines keep FP64 products
        BlasEngine().matmul(X[:, :10].astype(float), Y[:10].astype(float), 128, 128,
                            out=np.empty((2, 2), np.int32))


def test_the_backends_choose_the_integer_types():
    """The CPU backend keeps int8 planes and INT32 products for an integer engine whose
    range holds the residues; FP64 elsewhere; the NumPy reference always FP64."""
    from ozaki.backends import get_backend
    from ozaki.core.moduli import MODULI
    cpu, ref = get_backend("cpu"), get_backend("numpy")
    eng = OneDNNEngine()
    int8, fp8, fp64 = MODULI["int8"], MODULI["fp8"], MODULI["fp64"]
    assert cpu.plane_dtype(eng, int8) == np.int8
    assert cpu.plane_dtype(eng, fp8) == np.float64        # digits: moduli above 256
    assert cpu.plane_dtype(BlasEngine(), int8) == np.float64
    assert cpu.product_dtype(eng, 2 ** 31 - 1) == np.int32
    assert cpu.product_dtype(eng, 2 ** 31) == np.float64
    assert cpu.product_dtype(BlasEngine(), 10) == np.float64
    assert ref.plane_dtype(eng, int8) == np.float64 and ref.product_dtype(eng, 10) == np.float64
    assert max(fp64) > 256


@needs_onednn
@pytest.mark.parametrize("k", [131071, 131072])
def test_products_across_the_int32_threshold_equal_cpu_blas(k, rng):
    """At ``k 128**2 <= 2**31 - 1`` the pieces keep INT32 products, one more term and they
    keep FP64 ones: the bits are cpu-blas's (and the NumPy reference's) on both sides."""
    A = rng.standard_normal((2, k))
    B = rng.standard_normal((k, 3))
    A[0, ::7] *= 2.0 ** 40  # spread, so that the residues cover the range
    want = ozaki.dgemm(A, B, scheme="int8", engine="cpu-blas", num_moduli=16)
    for backend in ("cpu", "numpy"):
        got = ozaki.dgemm(A, B, scheme="int8", engine="cpu-onednn", num_moduli=16,
                          backend=backend)
        assert np.array_equal(bits(got), bits(want)), backend


@needs_onednn
def test_prepared_operands_keep_planes_per_type(rng):
    """A prepared operand with kept residues serves FP64 and int8 engines alternately
    with the bits of unprepared calls (the planes are kept per dtype)."""
    A = rng.standard_normal((64, 300))
    Bs = [rng.standard_normal((300, 40)) for _ in range(2)]
    P = ozaki.prepare(A, side="left")
    for B in Bs:
        for eng in ("cpu-onednn", "cpu-blas", "cpu-onednn"):
            got = ozaki.dgemm(P, B, scheme="int8", engine=eng)
            want = ozaki.dgemm(A, B, scheme="int8", engine="cpu-blas")
            assert np.array_equal(bits(got), bits(want)), eng


@needs_onednn
def test_workspace_of_the_integer_types(rng):
    """``ozaki.workspace_bytes`` counts int8 planes (as many moduli a pass as fit 32 MiB)
    and INT32 products on the CPU backend, FP64 on the NumPy reference: what calls take."""
    m = k = n = 700
    A, B = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    kw = dict(scheme="int8", engine="cpu-onednn", mode="fast")
    _, info = ozaki.dgemm(A, B, return_info=True, **kw)
    kw.pop("mode")
    ints = ozaki.workspace_bytes(m, n, k, num_moduli=info.num_moduli, **kw)
    floats = ozaki.workspace_bytes(m, n, k, num_moduli=info.num_moduli, backend="numpy", **kw)
    assert info.workspace_bytes == ints
    N = info.num_moduli  # all N planes of both operands (N 980000 bytes) fit 32 MiB in int8
    # the INT32 (or FP64) product plane the store pass reads lives in the result
    assert ints == N * (m * k + k * n) + N * m * n
    assert floats == 8 * (m * k + k * n) * 4 + N * m * n  # 4 FP64 planes a pass


@needs_onednn
def test_engines_goals_clock_times_onednn_calls_only(rng):
    """``benchmarks.engines_goals`` reports the share of a call spent inside oneDNN's GEMM
    calls: its clock counts those calls (none for a ``cpu-blas`` product), stays below
    the call's wall time, and puts ``Library.call`` back afterwards."""
    from benchmarks.engines_goals import gemm_clock, run
    from ozaki.backends.onednn_library import Library
    A, B = rng.standard_normal((300, 200)), rng.standard_normal((200, 250))
    call = Library.call
    with gemm_clock() as spent:
        t0 = time.perf_counter()
        ozaki.dgemm(A, B, scheme="int8", engine="cpu-onednn")
        wall = time.perf_counter() - t0
    assert Library.call is call and 0.0 < spent[0] < wall
    with gemm_clock() as none:
        ozaki.dgemm(A, B, scheme="fp64", engine="cpu-blas")
    assert none[0] == 0.0
    rows = run((96, 64, 80), 1, ["int8/onednn/fast", "fp64/blas/fast"])
    share = {r["config"]: r.get("gemm_share") for r in rows}
    assert 0.0 < share["int8/onednn/fast"] < 1.0 and share["fp64/blas/fast"] is None
