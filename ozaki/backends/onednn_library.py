"""oneDNN's library for the ``cpu-onednn`` engine: found, loaded, probed, run on threads.

:mod:`ozaki.backends.onednn` runs its INT8 products on oneDNN's
``dnnl_gemm_u8s8s32`` (row-major C API), loaded here through :mod:`ctypes` from
the PyPI package ``onednn-cpu-gomp`` (``pip install 'ozaki-emu[onednn]'``).
:func:`library_path` finds ``libdnnl.so`` in that package; :func:`load_library`
loads it at the engine's first use
(:meth:`ozaki.backends.onednn.OneDNNEngine.available` or a product), never at
``import ozaki``, once per path, and keeps the reason when it cannot;
:class:`Library` is the loaded library: its GEMM ``C = (A - ao) B``, version,
instruction set, whether its kernels are VNNI ones, and its OpenMP controls.

VNNI detection
--------------
Without VNNI oneDNN's kernels saturate pairs of u8 x s8 products to int16, so
the engine's ``offset`` encoding is exact only on VNNI kernels (the argument is
in :mod:`ozaki.backends.onednn`, "Why the encoding matters").
``dnnl_get_effective_cpu_isa()`` (which honours ``ONEDNN_MAX_CPU_ISA``) is
decoded for oneDNN 3 (``avx2_vnni``, ``avx2_vnni_2``, ``avx512_core_vnni`` and
every later AVX-512/AMX level carry a VNNI bit), then confirmed at load by probe
products at the saturating extreme (``u = 255``, ``b = -128``) on the shapes of
oneDNN's GEMV, small and blocked kernels: if any probe is inexact,
:attr:`Library.vnni` is false and the engine uses ``split``. Another oneDNN
major version is taken as non-VNNI (``split``). A library whose ``split`` probes
are inexact (the kernels' arithmetic, or the binding, is off) is refused.

Threads and ``fork``
--------------------
The library runs on GNU OpenMP. A process forked after oneDNN ran an OpenMP team
(``multiprocessing`` with the ``fork`` start method) **hangs** in the child's
first oneDNN call with the parent's thread count (the team's threads do not
exist there; measured with oneDNN 3.2 and libgomp). So in a process forked from
the one that imported this module, every call runs oneDNN on one thread, where
it opens no OpenMP team (measured: the child then gives the parent's bits). Not
covered: a child forked before ``import ozaki`` from a parent whose *own* code
ran GNU OpenMP teams on the forking thread (it cannot be detected).

A child forked while another thread of the parent loads the library (its first
use) starts with a free load lock and loads it itself; the probes use no lazily
imported module (:func:`mixed`). A child forked while another thread's first use
*imports* numba (which the passes compile with, :mod:`ozaki.backends.onednn_passes`)
waits on Python's own import lock of that module, like any forked child of a thread
that was importing: fork after the first product, or use the ``spawn`` or
``forkserver`` start methods.

Elsewhere a call runs on at most :func:`ozaki.backends.cpu.parallel.threads`
threads (:func:`ozaki.set_workers`) and at most ``omp_get_max_threads()``
(``OMP_NUM_THREADS``, ``threadpoolctl``). The count is set with
``omp_set_num_threads`` only when it differs, and restored right after the call:
GNU OpenMP keeps it per calling thread (the ``nthreads-var`` ICV of the thread's
implicit task), so no other thread, and nothing after the call, sees a change.
This module reads and writes no environment variable (oneDNN itself reads its
``ONEDNN_*`` ones, such as ``ONEDNN_MAX_CPU_ISA``).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.metadata
import os
import re
import threading
from typing import Iterator

import numpy as np

__all__ = ["DISTRIBUTION", "INSTALL_HINT", "OneDNNUnavailable", "Library", "library_path",
           "load_library", "library_info"]

#: The PyPI package that ships ``libdnnl.so`` (GNU OpenMP build).
DISTRIBUTION = "onednn-cpu-gomp"
#: How to get it, named in every "not available" reason.
INSTALL_HINT = "pip install 'ozaki-emu[onednn]'"

#: oneDNN 3 ``dnnl_cpu_isa_t`` values, for messages (the VNNI test reads bits).
_ISA_NAMES = {0x0: "default", 0x1: "sse41", 0x3: "avx", 0x7: "avx2", 0xf: "avx2_vnni",
              0x1f: "avx2_vnni_2", 0x27: "avx512_core", 0x67: "avx512_core_vnni",
              0xe7: "avx512_core_bf16", 0x1ef: "avx512_core_fp16",
              0xfef: "avx512_core_amx", 0x1fef: "avx512_core_amx_fp16"}
#: In oneDNN 3 the AVX2 levels with VNNI have bit 0x8 and the AVX-512 ones bit 0x40.
_VNNI_BITS = 0x48

#: The process that imported this module: a call from any other is in a forked child.
_IMPORT_PID = os.getpid()


class OneDNNUnavailable(RuntimeError):
    """oneDNN cannot be used here; the message says why and how to install it."""


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_int), ("minor", ctypes.c_int), ("patch", ctypes.c_int),
                ("hash", ctypes.c_char_p), ("cpu_runtime", ctypes.c_uint),
                ("gpu_runtime", ctypes.c_uint)]


_DIM = ctypes.c_int64  # dnnl_dim_t
_GEMM_ARGS = [ctypes.c_char, ctypes.c_char, ctypes.c_char, _DIM, _DIM, _DIM, ctypes.c_float,
              ctypes.c_void_p, _DIM, ctypes.c_uint8, ctypes.c_void_p, _DIM, ctypes.c_int8,
              ctypes.c_float, ctypes.c_void_p, _DIM, ctypes.c_void_p]


def library_path() -> str | None:
    """Path of ``libdnnl.so`` in the installed ``onednn-cpu-gomp``, or ``None``.

    Read from the distribution's file list (:mod:`importlib.metadata`): the wheel
    installs the library as data under ``<prefix>/lib``. The versioned name
    (``libdnnl.so.3``) is preferred to the plain ``libdnnl.so``.
    """
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None
    names = [f for f in (dist.files or ()) if f.name.startswith("libdnnl.so")]
    if not names:
        return None

    def rank(f) -> tuple[int, str]:
        if re.fullmatch(r"libdnnl\.so\.\d+", f.name):
            return 0, f.name
        return (1 if f.name == "libdnnl.so" else 2), f.name
    return os.path.normpath(str(dist.locate_file(min(names, key=rank))))


class Library:
    """The loaded ``libdnnl``: its GEMM, version, instruction set and OpenMP controls.

    Parameters
    ----------
    path : str
        The shared library's file.

    Attributes
    ----------
    path : str
        As given.
    version : tuple of int
        ``(major, minor, patch)``.
    isa, isa_name : int, str
        ``dnnl_get_effective_cpu_isa()`` and its oneDNN 3 name (else in hex).
    vnni_isa : bool
        Whether that instruction set has VNNI (oneDNN 3 only).
    vnni : bool
        ``vnni_isa``, confirmed by the ``offset`` probes (module docstring).
    omp_get, omp_set : ctypes function or None
        GNU OpenMP's ``omp_get_max_threads`` and ``omp_set_num_threads`` (``None``
        where the library does not run on it).

    Raises
    ------
    OneDNNUnavailable
        When the file does not load, lacks the integer GEMM, or the ``split`` probes
        are inexact.
    """

    def __init__(self, path: str):
        self.path = path
        try:
            self.cdll = ctypes.CDLL(path)
        except OSError as exc:
            raise OneDNNUnavailable(f"oneDNN library {path} could not be loaded ({exc}); "
                                    f"reinstall it: {INSTALL_HINT}") from None
        try:
            self.gemm = self.cdll.dnnl_gemm_u8s8s32
            version = self.cdll.dnnl_version
            isa = self.cdll.dnnl_get_effective_cpu_isa
        except AttributeError as exc:
            raise OneDNNUnavailable(f"{path} is not a oneDNN library with the integer GEMM "
                                    f"({exc}); {INSTALL_HINT}") from None
        self.gemm.argtypes = _GEMM_ARGS
        self.gemm.restype = ctypes.c_int
        version.restype = ctypes.POINTER(_Version)
        v = version().contents
        self.version = (v.major, v.minor, v.patch)
        self.isa = int(isa())
        self.isa_name = _ISA_NAMES.get(self.isa, hex(self.isa)) if v.major == 3 \
            else hex(self.isa)
        # GNU OpenMP's controls, found through libdnnl's own dependencies (the
        # libgomp it runs on); absent from a TBB or sequential build.
        try:
            self.omp_get = self.cdll.omp_get_max_threads
            self.omp_set = self.cdll.omp_set_num_threads
            self.omp_get.restype = ctypes.c_int
            self.omp_set.argtypes = [ctypes.c_int]
            self.omp_set.restype = None
        except AttributeError:
            self.omp_get = self.omp_set = None
        self._co = np.zeros(1, np.int32)  # the fixed C offset, zero
        self.vnni_isa = v.major == 3 and bool(self.isa & _VNNI_BITS) and self.isa >= 0xf
        if not self._probe("split"):  # the kernels' arithmetic, or the binding, is off
            raise OneDNNUnavailable(f"oneDNN at {path} ({self.isa_name}) returned an inexact "
                                    f"product on a probe; {INSTALL_HINT}")
        self.vnni = self.vnni_isa and self._probe("offset")

    def threads(self, follow_workers: bool = True) -> contextlib.AbstractContextManager:
        """The OpenMP thread count for one call (module docstring, "Threads and fork");
        ``follow_workers=False`` keeps OpenMP's own count outside a forked child (for
        the load-time probes, which then read no numba configuration)."""
        return _omp_threads(self, follow_workers)

    def call(self, A: np.ndarray, B: np.ndarray, C: np.ndarray, ao: int) -> None:
        """``C = (A - ao) B`` for C-ordered rows: u8 ``A`` (M, K), s8 ``B`` (K, N), int32 ``C``."""
        M, K = A.shape
        N = B.shape[1]
        assert A.strides[1] == 1 and B.strides[1] == 1 and C.strides[1] == 4
        # a row stride of a single row is any value numpy chose (its layout flags ignore
        # it); oneDNN wants a leading dimension of at least the row's length
        lda = A.strides[0] if M > 1 else K
        ldb = B.strides[0] if K > 1 else N
        ldc = C.strides[0] // 4 if M > 1 else N
        status = self.gemm(b"N", b"N", b"F", M, N, K, 1.0, A.ctypes.data, lda, ao,
                           B.ctypes.data, ldb, 0, 0.0, C.ctypes.data, ldc,
                           self._co.ctypes.data)
        if status != 0:
            raise RuntimeError(f"dnnl_gemm_u8s8s32 failed (dnnl_status_t {status}) on "
                               f"M={M}, N={N}, K={K}")

    def _probe(self, encoding: str) -> bool:
        """Whether the encoding's products are exact at its extremes, on the shapes of
        oneDNN's GEMV (m = 1, n = 1), small and blocked kernels."""
        for m, k, n in PROBE_SHAPES:
            if encoding == "offset":  # u = 255 and b = -128: each pair 65280 without VNNI
                A = np.full((m, k), 255, np.uint8)
                A[:, 1::3] = mixed((m, len(range(1, k, 3))), 0, 255, 1)
                ao, want_a = 128, A.astype(np.int64) - 128
            else:
                A = np.full((m, k), 127, np.uint8)
                A[:, 1::3] = mixed((m, len(range(1, k, 3))), 0, 127, 1)
                ao, want_a = 0, A.astype(np.int64)
            B = np.full((k, n), -128, np.int8)
            B[2::5] = mixed((len(range(2, k, 5)), n), -128, 127, 2)
            C = np.empty((m, n), np.int32)
            with _omp_threads(self, follow_workers=False):
                self.call(A, B, C, ao)
            if not np.array_equal(C, want_a @ B.astype(np.int64)):
                return False
        return True


#: The probes' shapes: oneDNN's GEMV (m = 1, n = 1), small and blocked kernels.
PROBE_SHAPES = ((1, 300, 70), (70, 300, 1), (3, 5, 7), (67, 1031, 45), (65, 1500, 40))


def mixed(shape: tuple[int, ...], lo: int, hi: int, seed: int) -> np.ndarray:
    """Integers in ``[lo, hi]`` spread over the range (a Weyl sequence), for the probes:
    deterministic and without ``numpy.random``, whose first use imports it (a child
    forked while another thread imports would wait on that import for ever)."""
    i = np.arange(int(np.prod(shape)), dtype=np.int64) + 7919 * seed
    return (lo + (i * 2654435761) % (hi - lo + 1)).reshape(shape)


@contextlib.contextmanager
def _omp_threads(lib: Library, follow_workers: bool = True) -> Iterator[None]:
    """Run the block's oneDNN calls on one thread in a forked child, else on the calling
    thread's count (``follow_workers``) or OpenMP's (module docstring, "Threads and fork")."""
    forked = os.getpid() != _IMPORT_PID
    if lib.omp_set is None or not (forked or follow_workers):
        yield
        return
    have = int(lib.omp_get())
    if forked:  # open no OpenMP team: the parent's team threads are gone here
        want = 1
    else:
        from .cpu import parallel
        want = max(1, min(have, parallel.threads()))
    if want == have:
        yield
        return
    lib.omp_set(want)  # GNU OpenMP: the calling thread's ICV only
    try:
        yield
    finally:
        lib.omp_set(have)


_loaded: dict[str | None, Library | str] = {}
_paths: dict = {}
_load_lock = threading.Lock()


def _after_fork_in_child() -> None:
    """A child forked while another thread of the parent held the load lock (loading
    or probing the library) would wait on it for ever: it starts with a free one, and
    loads the library itself if the parent had not finished."""
    global _load_lock
    _load_lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def load_library() -> Library:
    """The library, loaded at the first call; raises :class:`OneDNNUnavailable`.

    The path is looked up once per process (per :func:`library_path` function: a
    test may replace this module's), the library loaded once per path.
    """
    finder = library_path
    try:
        path = _paths[finder]
    except KeyError:
        path = _paths.setdefault(finder, finder())
    got = _loaded.get(path)
    if got is None:
        with _load_lock:
            got = _loaded.get(path)
            if got is None:
                if path is None:
                    got = (f"oneDNN is not installed (no package {DISTRIBUTION!r} with "
                           f"libdnnl.so; wheels for x86-64 Linux); install it: {INSTALL_HINT}")
                else:
                    try:
                        got = Library(path)
                    except OneDNNUnavailable as exc:
                        got = str(exc)
                _loaded[path] = got
    if isinstance(got, str):
        raise OneDNNUnavailable(got)
    return got


def library_info() -> dict:
    """What the engine runs on: ``path``, ``version``, ``isa``, ``vnni``, ``encoding``.

    Loads the library; raises :class:`OneDNNUnavailable` (with the reason) without it.
    """
    lib = load_library()
    return {"path": lib.path, "version": ".".join(map(str, lib.version)), "isa": lib.isa_name,
            "vnni": lib.vnni, "encoding": "offset" if lib.vnni else "split"}
