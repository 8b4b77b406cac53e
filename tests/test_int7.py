"""The ``int7`` scheme: moduli up to 128, one INT8 GEMM a modulus even without VNNI.

Its table, its automatic count (re-measured against exact references), its
accuracy, the same bits on every engine that runs it, and the ``cpu-onednn``
engine's narrow ``offset`` encoding on oneDNN's non-VNNI kernels, which a child
process selects with ``ONEDNN_MAX_CPU_ISA=AVX2`` (the library never sets it).
"""

import hashlib
import json
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ozaki
from ozaki.backends import engines
from ozaki.backends.engines import BlasEngine, FP8Engine, Int8Engine
from ozaki.backends.onednn import NARROW_S8, OneDNNEngine
from ozaki.core.moduli import MODULI, MODULI_VERSION, SCHEMES, auto_num_moduli, half_range
from validation.reference import exact_matmul, test_matrix

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
U = 2.0 ** -53
_PROBE = OneDNNEngine()
HAVE_ONEDNN = _PROBE.available()
needs_onednn = pytest.mark.skipif(not HAVE_ONEDNN, reason=f"cpu-onednn: {_PROBE.reason}")


def bits(C):
    return np.ascontiguousarray(C).view(np.int64)


def max_rel(C, ref):
    nz = ref != 0
    return float(np.max(np.abs(C[nz] - ref[nz]) / np.abs(ref[nz])))


# --- the table ------------------------------------------------------------------------

def test_table_is_the_greedy_coprime_integers_up_to_128():
    greedy = []
    for p in range(128, 1, -1):
        if all(math.gcd(p, q) == 1 for q in greedy):
            greedy.append(p)
    assert MODULI["int7"] == tuple(greedy[:24]) and len(MODULI["int7"]) == 24
    ms = MODULI["int7"]
    assert all(math.gcd(p, q) == 1 for i, p in enumerate(ms) for q in ms[i + 1:])
    assert max(ms) == 128 and ozaki.moduli("int7") == ms
    # appended: the other schemes, their order and tables are unchanged (version 2 is
    # the refinement's price, not a table)
    assert SCHEMES == ("int8", "fp8", "fp64", "int7") and ozaki.SCHEMES == SCHEMES
    assert MODULI_VERSION == 2 and MODULI["int8"][0] == 256 and len(MODULI["int8"]) == 20


def test_residues_are_within_the_narrow_s8_range():
    """Symmetric residues of moduli up to 128 are within [-64, 64] (64 only for -64 mod
    128), the range the non-VNNI kernels take in one GEMM."""
    for p in MODULI["int7"]:
        lo, hi = half_range(p)
        assert hi - lo + 1 == p and -NARROW_S8 <= lo and hi <= NARROW_S8
    assert half_range(128) == (-64, 63)


class _Recorder(Int8Engine):
    """cpu-int8 that records each call's declared bounds and actual magnitudes."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def matmul(self, X, Y, amax, bmax, out=None):
        self.calls.append((amax, bmax, float(np.abs(X).max(initial=0)),
                           float(np.abs(Y).max(initial=0))))
        return super().matmul(X, Y, amax, bmax, out=out)


@pytest.mark.parametrize("mode", ["fast", "accurate"])
def test_every_gemm_of_the_scheme_is_narrow(mode, rng):
    """Every exact GEMM an int7 product makes (the modular products and the accurate
    mode's floor GEMM, real and complex) declares and has operands within 64."""
    A = test_matrix(9, 130, 3.0, rng)
    B = test_matrix(130, 7, 3.0, rng)
    for f in (lambda e: ozaki.dgemm(A, B, scheme="int7", mode=mode, engine=e, num_moduli=24),
              lambda e: ozaki.zgemm(A + 1j * A[::-1], B - 2j * B, scheme="int7", mode=mode,
                                    engine=e)):
        eng = _Recorder()
        f(eng)
        assert len(eng.calls) >= 18
        for amax, bmax, xa, xb in eng.calls:
            assert max(amax, bmax) <= NARROW_S8 and xa <= amax and xb <= bmax


def test_auto_counts():
    counts = {e: auto_num_moduli("int7", 2 ** e) for e in range(31)}
    assert all(counts[e] == 19 for e in range(20))          # k <= 2**19
    assert all(counts[e] == 20 for e in range(20, 28))      # 2**20 <= k <= 2**27
    assert list(counts.values()) == sorted(counts.values()) and counts[30] <= 24
    bits = np.cumsum(np.log2(MODULI["int7"]))
    assert bits[17] < 120.0 <= bits[18]  # the target: 19 moduli, 18 fall short


# --- accuracy against exact references ------------------------------------------------

@pytest.fixture(scope="module")
def problems():
    """The acceptance problems of tests/test_accuracy.py at k <= 4096 (m = n = 16)."""
    rng = np.random.default_rng(7)
    out = {}
    for k in (256, 4096):
        for phi in (0.0, 0.5, 1.0, None):
            A, B = test_matrix(16, k, phi, rng), test_matrix(k, 16, phi, rng)
            ref = exact_matmul(A, B)
            out[k, phi] = (A, B, ref, max_rel(A @ B, ref))
    return out


def test_auto_count_within_twice_native(problems):
    """The figure behind ``_AUTO_BITS["int7"]``: at k <= 4096 the automatic count (19)
    keeps the componentwise error within twice native FP64's in both modes."""
    for (k, phi), (A, B, ref, native) in problems.items():
        limit = max(2 * native, 2.0 ** -52)
        for mode in ("fast", "accurate"):
            C = ozaki.dgemm(A, B, scheme="int7", mode=mode, num_moduli=auto_num_moduli("int7", k))
            assert max_rel(C, ref) <= limit, (k, phi, mode)


@pytest.mark.parametrize("k, m, phi, seed, modes", [(4096, 16, 0.5, 7, ("fast",)),
                                                    (65536, 8, 1.0, 10, ("fast", "accurate"))])
def test_one_modulus_fewer_is_not_enough(k, m, phi, seed, modes):
    """Problems of the measurement where 18 moduli miss twice native FP64's error and the
    automatic 19 meet it (both modes)."""
    rng = np.random.default_rng(seed)
    A, B = test_matrix(m, k, phi, rng), test_matrix(k, m, phi, rng)
    ref = exact_matmul(A, B)
    limit = max(2 * max_rel(A @ B, ref), 2.0 ** -52)
    assert auto_num_moduli("int7", k) == 19
    for mode in ("fast", "accurate"):
        if mode in modes:
            assert max_rel(ozaki.dgemm(A, B, scheme="int7", mode=mode, num_moduli=18),
                           ref) > limit
        assert max_rel(ozaki.dgemm(A, B, scheme="int7", mode=mode, num_moduli=19),
                       ref) <= limit


@pytest.mark.parametrize("mode", ["fast", "accurate"])
def test_dgemm_and_zgemm_are_fp64_grade(problems, mode):
    """``num_moduli="auto"``: within twice native FP64, and within the per-entry bound
    the call certifies (``bounds=True``), against exact references."""
    for phi in (0.0, 1.0, None):
        A, B, ref, native = problems[4096, phi]
        C, info = ozaki.dgemm(A, B, scheme="int7", mode=mode, bounds=True, return_info=True)
        assert info.scheme == "int7" and info.num_moduli <= 24
        assert max_rel(C, ref) <= max(2 * native, 2.0 ** -52), phi
        assert (np.abs(C - ref) <= info.error_bound + 2 * U * np.abs(ref)).all()
    rng = np.random.default_rng(3)
    Ar, Ai, Br, Bi = (test_matrix(*s, 1.0, rng) for s in ((12, 700), (12, 700),
                                                           (700, 10), (700, 10)))
    Z = ozaki.zgemm(Ar + 1j * Ai, Br + 1j * Bi, scheme="int7", mode=mode)
    re = exact_matmul(np.hstack((Ar, Ai)), np.vstack((Br, -Bi)))
    im = exact_matmul(np.hstack((Ar, Ai)), np.vstack((Bi, Br)))
    W = (Ar + 1j * Ai) @ (Br + 1j * Bi)
    native = max(max_rel(W.real, re), max_rel(W.imag, im))
    assert max(max_rel(Z.real, re), max_rel(Z.imag, im)) <= max(2 * native, 2.0 ** -52)


# --- the same bits on every engine ---------------------------------------------------

def _engines():
    out = [Int8Engine(), Int8Engine(max_kblock=37)]
    if HAVE_ONEDNN:
        out += [OneDNNEngine(), OneDNNEngine(encoding="split"), OneDNNEngine(max_kblock=50)]
    return out


def test_engines_that_run_it():
    """Every INT8 and FP64 engine, one GEMM a modulus; not the FP8 model, whose operands
    (E4M3 integers up to 16) do not hold the bound GEMM's floors (up to 63)."""
    runs = [name for name, cls in engines.ENGINES.items() if "int7" in cls.schemes]
    assert runs == ["cpu-blas", "cpu-int8", "cpu-onednn"]
    for name in runs[:2] + (runs[2:] if HAVE_ONEDNN else []):
        assert ozaki.gemms_per_modulus("int7", name) == 1
    assert FP8Engine.operand_max < 2 ** 6 - 1
    with pytest.raises(ValueError, match="does not run scheme 'int7'"):
        ozaki.dgemm(np.eye(3), np.eye(3), scheme="int7", engine="cpu-fp8")
    if HAVE_ONEDNN:  # the CPU backend's integer types: int8 planes, INT32 products
        from ozaki.backends import get_backend
        assert get_backend("cpu").plane_dtype(OneDNNEngine(), MODULI["int7"]) == np.int8
    assert [cls.preferred_scheme for cls in engines.ENGINES.values()] == \
        ["fp64", "fp8", "int8", "int8"]


def _same(f):
    """``f(engine)`` on every engine that runs int7 equals cpu-blas's, bit for bit."""
    ref = f(BlasEngine())
    for eng in _engines():
        got = f(eng)
        if isinstance(ref, tuple):
            assert got[1].num_moduli == ref[1].num_moduli, eng
            assert np.array_equal(bits(got[1].error_bound), bits(ref[1].error_bound)), eng
            got, want = got[0], ref[0]
        else:
            want = ref
        assert np.array_equal(bits(got.view(np.float64)), bits(want.view(np.float64))), eng
    return ref


@pytest.mark.parametrize("mode", ["fast", "accurate"])
def test_same_bits_dgemm_zgemm_matmul_on_odd_and_strided_operands(mode, rng):
    base_a = test_matrix(40, 301, 2.0, rng)
    base_b = test_matrix(301, 30, 2.0, rng)
    A = np.asfortranarray(base_a)[::3, :]             # strided rows, Fortran order
    B = base_b.T.copy().T[:, ::2]                      # a transposed view, strided columns
    for count in ("auto", 24, 5):
        _same(lambda e: ozaki.dgemm(A, B, scheme="int7", mode=mode, num_moduli=count,
                                    engine=e, bounds=True, return_info=True))
    _same(lambda e: ozaki.gemm(base_a[:17].T.copy(), base_b[:, :13].T.copy(), trans_a=True,
                               trans_b=True, scheme="int7", mode=mode, engine=e))
    Z = A + 1j * A[::-1]
    _same(lambda e: ozaki.zgemm(Z, B - 3j * B[::-1], scheme="int7", mode=mode, engine=e))
    S = test_matrix(3 * 9, 67, 1.0, rng).reshape(3, 9, 67)
    T = test_matrix(67, 5, 1.0, rng)
    _same(lambda e: ozaki.matmul(S, T, scheme="int7", mode=mode, engine=e))
    _same(lambda e: ozaki.matmul(T.T, S.transpose(0, 2, 1), scheme="int7", mode=mode,
                                 engine=e))


@settings(max_examples=12)
@given(m=st.integers(1, 9), k=st.integers(1, 200), n=st.integers(1, 9),
       phi=st.sampled_from([0.0, 1.0, 6.0]), mode=st.sampled_from(["fast", "accurate"]),
       count=st.sampled_from(["auto", 2, 17, 24]), seed=st.integers(0, 2 ** 32 - 1))
def test_same_bits_on_random_shapes(m, k, n, phi, mode, count, seed):
    rng = np.random.default_rng(seed)
    A, B = test_matrix(m, k, phi, rng), test_matrix(k, n, phi, rng)
    _same(lambda e: ozaki.dgemm(A, B, scheme="int7", mode=mode, num_moduli=count,
                                engine=e, bounds=True, return_info=True))


def test_machine_scheme_rule(monkeypatch):
    """fast mode: int8 with VNNI, int7 where oneDNN's narrow offset is exact without it,
    fp64 without oneDNN; accurate mode: int8 with VNNI, else fp64; a pinned scheme
    wins in both modes."""
    class Fake:
        def __init__(self, ok, wide, narrow):
            self.ok, self.wide, self.narrow = ok, wide, narrow

        def available(self):
            return self.ok

        @property
        def encoding(self):
            return self.wide

        def encoding_for(self, bmax):
            return self.narrow if bmax <= NARROW_S8 else self.wide

    for ok, wide, narrow, fast, accurate in ((True, "offset", "offset", "int8", "int8"),
                                             (True, "split", "offset", "int7", "fp64"),
                                             (True, "split", "split", "fp64", "fp64"),
                                             (False, "split", "split", "fp64", "fp64")):
        monkeypatch.setattr(engines, "OneDNNEngine", lambda: Fake(ok, wide, narrow))
        assert engines.machine_scheme("fast") == fast
        assert engines.machine_scheme("accurate") == accurate
        with ozaki.set_scheme("int7"):
            assert engines.machine_scheme("accurate") == "int7"
            assert engines.machine_scheme("fast") == "int7"


@needs_onednn
def test_encoding_per_call_on_this_machine():
    """With VNNI every call takes ``offset`` (unchanged); a forced ``split`` stays split
    for narrow operands too."""
    eng, split = OneDNNEngine(), OneDNNEngine(encoding="split")
    assert split.encoding_for(1) == "split" and split.gemms_for(64) == 2
    assert split.kblock(64, 64) == 131071
    if eng.encoding == "offset":  # VNNI
        assert eng.encoding_for(64) == eng.encoding_for(128) == "offset"
        assert eng.kblock(64, 64) == 65793 and eng.gemms_for(64) == 1


# --- oneDNN's kernels without VNNI, in a child process -------------------------------

def _inputs():
    rng = np.random.default_rng(17)
    A = test_matrix(37, 301, 1.5, rng)
    B = test_matrix(301, 23, 1.5, rng)
    return A, B, A + 1j * A[::-1], B - 2j * B[::-1]


def _products(engine) -> dict:
    """Digests of the calls the child and the parent both make (emulated products; few
    moduli too, whose results are not the exactly rounded ones that every count above
    some shares)."""
    A, B, Z, W = _inputs()
    out = {}
    with ozaki.set_small_products(False):
        for mode in ("fast", "accurate"):
            for count in ("auto", 9):
                out[f"dgemm/{mode}/{count}"] = ozaki.dgemm(A, B, scheme="int7", mode=mode,
                                                           num_moduli=count, engine=engine)
            out[f"zgemm/{mode}"] = ozaki.zgemm(Z, W, scheme="int7", mode=mode, num_moduli=11,
                                               engine=engine)
        out["matmul"] = ozaki.matmul(A.reshape(1, 37, 301), B, scheme="int7", num_moduli=8,
                                     engine=engine)
        out["int8/accurate"] = ozaki.dgemm(A, B, scheme="int8", num_moduli=7, engine=engine)
        out["fp8/fast"] = ozaki.dgemm(A, B, scheme="fp8", mode="fast", num_moduli=6,
                                      engine=engine)  # FP8 digits: narrow too
    return {k: hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest()
            for k, v in out.items()}


_NON_VNNI = """
    import hashlib, json, sys, threading
    import numpy as np
    import ozaki
    from ozaki.backends import engines, onednn, onednn_library
    from ozaki.backends.onednn import OneDNNEngine
    sys.path.insert(0, "tests")
    from test_int7 import _inputs, _products

    lib = onednn_library.load_library()
    res = {"info": onednn.library_info()}
    exact = lambda X, Y: np.asarray(X).astype(np.int64) @ np.asarray(Y).astype(np.int64)

    # these kernels saturate pairs: u = 255 against b = -128 is wrong, against +-64 exact
    A8 = np.full((3, 1000), 255, np.uint8)
    C = np.empty((3, 4), np.int32)
    for name, b in (("wide", -128), ("narrow", -64)):
        Y8 = np.full((1000, 4), b, np.int8)
        Y8[:, 1::2] = -b if b == -64 else b
        lib.call(A8, Y8, C, 128)
        res[name + "_exact"] = bool(np.array_equal(C, exact(A8.astype(np.int64) - 128, Y8)))

    eng, split = OneDNNEngine(), OneDNNEngine(encoding="split")
    res["plan"] = [eng.encoding_for(64), eng.encoding_for(65), eng.encoding, eng.gemms_for(64),
                   eng.gemms_per_call, eng.kblock(64, 64), eng.kblock(128, 128),
                   split.encoding_for(64), split.gemms_for(64)]

    # the extremes: A at -128 / 127, B at -+64, pairs of equal signs and alternating ones
    ok, checked = True, 0
    for m, k, n in ((3, 1000, 5), (1, 4001, 5), (6, 4001, 1), (2, 87609, 3), (2, 87610, 3),
                    (2, 131072, 3)):
        rows, inner, cols = np.arange(m), np.arange(k), np.arange(n)
        xs = [np.full((m, k), 127.0), np.full((m, k), -128.0),
              np.where(np.add.outer(rows, inner) % 2, 127.0, -128.0)]
        ys = [np.full((k, n), 64.0), np.full((k, n), -64.0),
              np.where(np.add.outer(inner, cols) % 2, 64.0, -64.0),      # pairs cancel
              np.where(np.add.outer(inner // 2, cols) % 2, 64.0, -64.0)]  # pairs of one sign
        for X in xs:
            for Y in ys:
                ok &= bool(np.array_equal(eng.matmul(X, Y, 128, 64), exact(X, Y)))
                checked += 1
        X8, Y8 = xs[0].astype(np.int8), ys[3].astype(np.int8)
        out = np.empty((m, n), np.int32)  # int8 planes in, INT32 out
        ok &= bool(np.array_equal(eng.matmul(X8, Y8, 128, 64, out=out), exact(X8, Y8)))
    rng = np.random.default_rng(5)
    X = rng.integers(-128, 128, (70, 91)).astype(float)
    Y = rng.integers(-64, 65, (91, 80)).astype(float)
    for x, y in ((X, Y), (np.asfortranarray(X), np.asfortranarray(Y)), (X[::2, ::3], Y[::3, ::2]),
                 (X[::-1, ::-1], Y[::-1, :]), (X.T.copy().T, Y.T.copy().T),
                 (X.astype(np.int8), Y.astype(np.int8)[:, ::2]),
                 (X.astype(np.float32), Y.astype(np.int16))):
        ok &= bool(np.array_equal(eng.matmul(x, y, 128, 64), exact(x, y)))
        checked += 1
    res["extremes"], res["checked"] = ok, checked

    # a call whose bmax is wrong for its data is refused, not saturated
    raised = 0
    for Y in (np.full((40, 3), 65.0), np.full((40, 3), -65, np.int8)):
        try:
            eng.matmul(np.full((2, 40), 127.0), Y, 128, 64)
        except ValueError as exc:
            raised += "[-64, 64]" in str(exc)
    res["raised"] = raised

    # one engine, concurrent calls of both encodings: each chooses its own
    errors = []
    def work(bmax, fill):
        X = np.full((5, 3000), 127.0)
        Y = np.full((3000, 4), float(fill))
        for _ in range(20):
            if not np.array_equal(eng.matmul(X, Y, 128, bmax), exact(X, Y)):
                errors.append(bmax)
    threads = [threading.Thread(target=work, args=a) for a in ((64, -64), (128, -128)) * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    res["threads_exact"] = not errors

    # whole products: the parent's bits; int7 takes one offset GEMM (ao = 128) a call
    call, seen = lib.call, {}
    def recording(key):
        def recorded(A, B, C, ao):
            seen.setdefault(key, set()).add(int(ao))
            return call(A, B, C, ao)
        return recorded
    lib.call = recording("all")
    res["digests"] = _products("cpu-onednn")
    lib.call = recording("int7")
    A, B, Z, W = _inputs()
    with ozaki.set_small_products(False):
        for mode in ("fast", "accurate"):
            ozaki.dgemm(A, B, scheme="int7", mode=mode, engine="cpu-onednn")
            ozaki.zgemm(Z, W, scheme="int7", mode=mode, engine="cpu-onednn")
    lib.call = call
    res["int7_offsets"], res["all_offsets"] = sorted(seen["int7"]), sorted(seen["all"])

    # scheme="auto": int7 in fast mode, on cpu-onednn; fp64 in accurate mode
    with ozaki.set_small_products(False):
        C, info = ozaki.dgemm(A, B, mode="fast", return_info=True)
        res["auto_fast"] = [info.scheme, info.engine, hashlib.sha256(C.tobytes()).hexdigest()]
        res["auto_accurate"] = ozaki.dgemm(A, B, return_info=True)[1].scheme
        with ozaki.set_scheme("fp64"):
            res["pinned"] = ozaki.dgemm(A, B, mode="fast", return_info=True)[1].scheme
    res["machine"] = [engines.machine_scheme("fast"), engines.machine_scheme("accurate")]
    print(json.dumps(res))
"""


@needs_onednn
def test_non_vnni_kernels_take_int7_in_one_gemm_a_modulus_exactly():
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX2")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(_NON_VNNI)], capture_output=True,
                          text=True, timeout=300, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["info"]["vnni"] is False and got["info"]["encoding"] == "split", got["info"]
    # the child's kernels do saturate (else this test would prove nothing), but not narrow pairs
    assert got["wide_exact"] is False and got["narrow_exact"] is True
    assert got["plan"] == ["offset", "split", "split", 1, 2, 87609, 131071, "split", 2]
    assert got["extremes"] and got["checked"] == 6 * 12 + 7
    assert got["raised"] == 2 and got["threads_exact"]
    assert got["int7_offsets"] == [128]  # every int7 GEMM (floor GEMM too) is one offset GEMM
    assert got["all_offsets"] == [0, 128]  # int8's products stay split, its floor GEMM not
    want = _products("cpu-blas")
    assert got["digests"] == want  # the parent's bits (a VNNI machine here)
    assert len(set(want.values())) == len(want)  # no two calls share their bits
    A, B, _, _ = _inputs()
    with ozaki.set_small_products(False):
        C = ozaki.dgemm(A, B, scheme="int7", mode="fast", engine="cpu-blas")
    assert got["auto_fast"] == ["int7", "cpu-onednn", hashlib.sha256(C.tobytes()).hexdigest()]
    assert got["auto_accurate"] == "fp64" and got["pinned"] == "fp64"
    assert got["machine"] == ["int7", "fp64"]
