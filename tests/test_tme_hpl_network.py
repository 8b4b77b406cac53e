"""Tests of tme_model.hpl_network: the traffic formulas exact against a brute-force walk of
``ozaki.distributed.lu_factor``'s and ``lu_solve``'s schedules (ozaki's own ``bcast`` and
``move_rows`` counting on a stand-in communicator), the interchanges' expectation and
bound against random pivots, the time model's limits and monotony (the GPU-cluster
projection: tests/test_tme_hpl_cluster.py; the measured-run check:
tests/test_tme_hpl_check.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tme_model import hpl_network as H
from tme_model.hpl_check import SMALL_WORK, ProfileMachine
from tme_model.hpl_cluster import DeviceMachine, cluster_rows, hpl_order
from tme_model.lu_projection import project_lu
from tme_model.network import Network
from tme_model.profile import PhaseCosts, Profile
from tme_model.scenario import Scenario
from tme_model.specs import load_devices

B300 = load_devices()["b300"]
PROFILE = Profile("local", 0.05, 0.01, 0.012, {"fp64": {"cpu-blas": 0.04}},
                  phases={"fp64": PhaseCosts(2e-9, 4e-9, 1.5e-9, 3e-9, 1e-3)}, fp64_n0=300.0)
NET = Network("x", "x", 5e-6, 2e9)
FREE = Network("free", "free", 0.0, 1e300)
#: (n, nb, P, Q): n a multiple of nb or not, n below nb, one process row or column
CASES = [(37, 8, 2, 3), (48, 16, 1, 4), (20, 32, 4, 1), (33, 5, 3, 2), (64, 8, 1, 1),
         (50, 7, 4, 4), (9, 2, 3, 1)]


class _Comm:
    """What ozaki's counting collectives ask of a communicator; moves nothing."""

    def __init__(self, size, rank):
        self.size, self.rank = size, rank

    def Get_size(self):
        return self.size

    def Get_rank(self):
        return self.rank

    def Bcast(self, buf, root=0):
        pass

    def Alltoallv(self, send, recv):
        pass


def fisher_yates(n, rng):
    """LU-like pivots: ``piv[i]`` uniform on ``i..n-1``."""
    return np.array([rng.integers(i, n) for i in range(n)], np.int64)


def brute_factor(n, nb, P, Q, p, q, piv):
    """Rank (p, q)'s traffic, walking lu_factor's schedule (ozaki/distributed/lu.py) with
    ozaki's own bcast and move_rows counting."""
    from ozaki.distributed.cyclic import cyclic_indices, owner
    from ozaki.distributed.rows import composed, move_rows
    from ozaki.distributed.traffic import Traffic, bcast
    rows, cols = cyclic_indices(n, nb, P, p), cyclic_indices(n, nb, Q, q)
    tr, X = Traffic(), np.zeros((len(rows), len(cols)))
    for k in range(0, n, nb):
        w, e = min(nb, n - k), min(k + nb, n)
        (pc, lc), pr = owner(k, nb, Q), owner(k, nb, P)[0]
        rk, ce = int(np.searchsorted(rows, k)), int(np.searchsorted(cols, e))
        if q == pc and P > 1:  # factor_panel: one all-gather per column
            for _ in range(w):
                tr.add("pivots", 8 * (3 + 2 * w) * (P - 1), P - 1)
        bcast(_Comm(Q, q), np.empty((len(rows) - rk, w)), pc, tr, "panels")
        bcast(_Comm(Q, q), np.empty(w + 1, np.int64), pc, tr, "pivots")
        outside = (slice(0, lc), slice(lc + w, None)) if q == pc else (slice(None),)
        move_rows(_Comm(P, p), X, composed(piv[k:e], k), nb, outside, tr)
        if e < n:
            bcast(_Comm(P, p), np.empty((w, len(cols) - ce)), pr, tr, "panels")
    return tr.by_kind or {}


def brute_solve(n, nb, P, Q, p, q, nrhs, piv):
    """The same for lu_solve (ozaki/distributed/lu.py, triangular.py, factor.py)."""
    from ozaki.distributed.cyclic import cyclic_indices, owner
    from ozaki.distributed.rows import composed, move_rows
    from ozaki.distributed.traffic import Traffic, bcast
    rows = cyclic_indices(n, nb, P, p)
    tr = Traffic()
    tr.add("rhs", 8 * len(rows) * len(cyclic_indices(nrhs, nb, Q, q)) * (Q - 1), Q - 1)
    move_rows(_Comm(P, p), np.zeros((len(rows), nrhs)), composed(piv, 0), nb,
              (slice(None),), tr)
    for _ in ("lower", "upper"):
        for k in range(0, n, nb):
            w = min(nb, n - k)
            bcast(_Comm(Q, q), np.empty((len(rows), w)), owner(k, nb, Q)[0], tr, "panels")
            bcast(_Comm(P, p), np.empty((w, nrhs)), owner(k, nb, P)[0], tr, "panels")
    return tr.by_kind or {}


def _same(model, counted):
    """The model's kinds against ozaki's count (a kind never counted: nothing sent)."""
    return all(tuple(model.get(k, (0, 0))) == tuple(counted.get(k, (0, 0)))
               for k in set(model) | set(counted))


@pytest.mark.parametrize("size,nb,parts", [(37, 8, 3), (20, 32, 4), (64, 8, 1), (9, 2, 3)])
def test_cyclic_count_is_ozakis_layout(size, nb, parts):
    from ozaki.distributed.cyclic import cyclic_indices
    for part in range(parts):
        idx = cyclic_indices(size, nb, parts, part)
        for start in range(-1, size + 2):
            assert H.cyclic_count(size, nb, parts, part, start) == np.sum(idx >= start)
    assert list(H.cyclic_count(size, nb, parts, np.arange(parts))) == [
        len(cyclic_indices(size, nb, parts, r)) for r in range(parts)]


@pytest.mark.parametrize("n,nb,P,Q", CASES)
def test_factor_traffic_is_the_schedules_exactly(n, nb, P, Q):
    rng = np.random.default_rng(n * 100 + P * 10 + Q)
    piv = fisher_yates(n, rng)
    keep = piv.copy()
    for p in range(P):
        for q in range(Q):
            counted = brute_factor(n, nb, P, Q, p, q, piv)
            assert _same(H.hpl_traffic(n, nb, P, Q, p, q, piv=piv), counted), (p, q)
            # without the pivots: panels, pivots and the interchanges' messages still exact
            for how in H.INTERCHANGES:
                got = H.hpl_traffic(n, nb, P, Q, p, q, interchanges=how)
                for kind in ("panels", "pivots"):
                    assert got[kind] == tuple(counted.get(kind, (0, 0)))
                assert got["interchanges"][1] == counted.get("interchanges", (0, 0))[1]
    assert np.array_equal(piv, keep)  # not modified


@pytest.mark.parametrize("n,nb,P,Q", CASES)
@pytest.mark.parametrize("nrhs", [1, 3])
def test_solve_traffic_is_the_schedules_exactly(n, nb, P, Q, nrhs):
    piv = fisher_yates(n, np.random.default_rng(n + nrhs))
    for p in range(P):
        for q in range(Q):
            counted = brute_solve(n, nb, P, Q, p, q, nrhs, piv)
            assert _same(H.solve_traffic(n, nb, P, Q, p, q, nrhs, piv=piv), counted), (p, q)
            got = H.solve_traffic(n, nb, P, Q, p, q, nrhs)
            assert got["panels"] == counted["panels"] and got["rhs"] == counted["rhs"]


@settings(max_examples=40, deadline=None)
@given(st.data(), st.sampled_from([(23, 4, 3, 2), (16, 16, 2, 1), (30, 3, 4, 3)]))
def test_interchanges_bound_holds_for_any_pivots(data, case):
    n, nb, P, Q = case
    piv = np.array([data.draw(st.integers(i, n - 1)) for i in range(n)], np.int64)
    for p in range(P):
        for q in range(Q):
            exact = H.hpl_traffic(n, nb, P, Q, p, q, piv=piv)["interchanges"][0]
            assert exact <= H.hpl_traffic(n, nb, P, Q, p, q, interchanges="bound")[
                "interchanges"][0]
            s_exact = H.solve_traffic(n, nb, P, Q, p, q, piv=piv).get("interchanges", (0, 0))
            s_bound = H.solve_traffic(n, nb, P, Q, p, q, interchanges="bound").get(
                "interchanges", (0, 0))
            assert s_exact[0] <= s_bound[0]


def test_interchanges_expectation_under_uniform_pivots():
    """The mean over Fisher-Yates pivots is the expected count, within 4 standard errors."""
    n, nb, P, Q, draws = 40, 8, 3, 2, 1500
    rng = np.random.default_rng(7)
    pivs = [fisher_yates(n, rng) for _ in range(draws)]
    for p, q in ((0, 0), (1, 1), (2, 0)):
        for f in (H.hpl_traffic, H.solve_traffic):
            x = np.array([f(n, nb, P, Q, p, q, piv=v)["interchanges"][0] for v in pivs])
            want = f(n, nb, P, Q, p, q)["interchanges"][0]
            assert abs(x.mean() - want) <= 4 * x.std() / np.sqrt(draws) + 1e-9, (f, p, q)


@pytest.mark.parametrize("call,match", [
    (lambda: H.hpl_traffic(0, 4, 1, 1, 0, 0), "n must be a positive int"),
    (lambda: H.hpl_traffic(8, 4, 2, 2, 2, 0), r"not on the 2 x 2 grid"),
    (lambda: H.hpl_traffic(8, 4, 2, 2, 0, 0, piv=np.zeros(7, int)), "shape"),
    (lambda: H.hpl_traffic(8, 4, 2, 2, 0, 0, piv=np.zeros(8, int)), "LU pivots"),
    (lambda: H.hpl_traffic(8, 4, 2, 2, 0, 0, interchanges="worst"), "interchanges"),
    (lambda: H.solve_traffic(8, 4, 1, 2, 0, 0, interchanges="worst"), "interchanges"),
    (lambda: H.solve_traffic(8, 4, 2, 2, 0, 0, nrhs=0), "nrhs must be a positive int"),
    (lambda: H.hpl_time(8, 4, 2, 2, DeviceMachine(B300), NET, emulated=True, bcast="ring"),
     "bcast"),
    (lambda: hpl_order(B300, 2, 2, 64, fill=1.5), "fill"),
    (lambda: hpl_order(B300, 2, 2, 0), "nb must be a positive int"),
    (lambda: cluster_rows("b300", 0), "ranks must be a positive int")])
def test_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.compensated  # the suite's fixture sets ozaki's threshold to 0 elsewhere
def test_small_work_is_ozakis():
    from ozaki.core.compensated import SMALL_WORK as ozakis
    assert SMALL_WORK == ozakis


def _time(n, nb, P, Q, net, machine=None, **kw):
    return H.hpl_time(n, nb, P, Q, machine or ProfileMachine(PROFILE, 0.7), net,
                      emulated=kw.pop("emulated", True), **kw)


@pytest.mark.parametrize("n,nb,P,Q", [(100, 16, 2, 3), (64, 64, 1, 1), (90, 7, 3, 1)])
def test_the_solve_copies_each_block_column_twice(n, nb, P, Q):
    """lu_solve makes each block column contiguous on its process column before its
    broadcast, in both triangular solves: 16 bytes per entry of the tallest rank's rows."""
    from ozaki.distributed.cyclic import cyclic_indices
    t = _time(n, nb, P, Q, NET)
    rows = max(len(cyclic_indices(n, nb, P, p)) for p in range(P))
    copied = sum(2 * 16 * rows * min(nb, n - k) for k in range(0, n, nb))
    assert t["solve_phases"]["other"] == pytest.approx(copied / (PROFILE.mem_tbps * 1e12 * 0.7),
                                                       rel=1e-12)
    assert t["phases"]["other"] == 0
    assert t["solve_s"] == pytest.approx(sum(t["solve_phases"].values()), rel=1e-12)


@pytest.mark.parametrize("emulated", [True, False])
def test_one_rank_has_no_communication(emulated):
    a = _time(300, 32, 1, 1, NET, emulated=emulated)
    b = _time(300, 32, 1, 1, Network("slow", "slow", 1.0, 1.0), emulated=emulated)
    assert a["communication_s"] == 0 and a["total_s"] == b["total_s"] > 0


@pytest.mark.parametrize("gamma", [0.0, None])
def test_one_gpu_is_the_device_projection(gamma):
    """P = Q = 1 on a GPU: panels, triangular solves and updates are lu_projection's."""
    n, nb = 5000, 256
    sc = Scenario(scheme="fp8", gamma=gamma)
    ref = project_lu(n, B300, nb, sc)
    for emulated, upd in ((False, ref.gemm_native_s), (True, ref.gemm_emulated_s)):
        t = H.hpl_time(n, nb, 1, 1, DeviceMachine(B300, sc), NET, emulated=emulated)
        assert t["phases"]["panel"] == pytest.approx(ref.panel_s, rel=1e-12)
        assert t["phases"]["triangular"] == pytest.approx(ref.triangular_s, rel=1e-12)
        assert t["phases"]["updates"] == pytest.approx(upd, rel=1e-12)
        # the interchanges: the w panel rows and the expected w (n - e) / (n - k) rows below
        # them, each read and written (lu_projection: w swaps of two rows, an upper bound)
        moved = sum(16 * (min(nb, n - k) * (1 + (n - k - min(nb, n - k)) / (n - k)))
                    * (n - min(nb, n - k)) for k in range(0, n, nb))
        assert t["phases"]["interchanges"] == pytest.approx(moved / 8e12, rel=1e-12)
        assert t["phases"]["interchanges"] <= ref.swap_s


@pytest.mark.parametrize("n,nb,P,Q", [(400, 32, 2, 3), (257, 64, 4, 1), (200, 50, 1, 2)])
@pytest.mark.parametrize("emulated", [True, False])
def test_a_free_network_leaves_the_compute(n, nb, P, Q, emulated):
    t, free = _time(n, nb, P, Q, NET, emulated=emulated), _time(n, nb, P, Q, FREE,
                                                                 emulated=emulated)
    assert free["communication_s"] < 1e-250
    assert free["total_s"] == pytest.approx(t["total_s"] - t["communication_s"], rel=1e-12)
    assert t["communication_s"] > 0


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([(96, 16, 2, 2), (100, 12, 3, 1), (64, 64, 1, 4), (90, 8, 2, 3)]),
       st.floats(0.0, 1e-4), st.floats(1e6, 1e11), st.booleans(), st.booleans(),
       st.sampled_from(["flat", "scatter-allgather"]), st.sampled_from(H.INTERCHANGES))
def test_a_faster_network_is_never_slower(case, alpha, beta, emulated, lookahead, bcast, how):
    n, nb, P, Q = case
    kw = dict(emulated=emulated, lookahead=lookahead, bcast=bcast, interchanges=how)
    base = _time(n, nb, P, Q, Network("a", "a", alpha, beta), **kw)["total_s"]
    wider = _time(n, nb, P, Q, Network("b", "b", alpha, 2 * beta), **kw)["total_s"]
    quicker = _time(n, nb, P, Q, Network("c", "c", alpha / 2, beta), **kw)["total_s"]
    assert wider <= base * (1 + 1e-12) and quicker <= base * (1 + 1e-12)


def test_lookahead_hides_at_most_the_panel():
    kw = dict(machine=DeviceMachine(B300, Scenario(scheme="fp8", gamma=0.0)))
    off, on = _time(20480, 512, 2, 2, NET, **kw), _time(20480, 512, 2, 2, NET, lookahead=True, **kw)
    assert off["panel_hidden_s"] == 0 and 0 < on["panel_hidden_s"] <= off["phases"]["panel"]
    assert on["total_s"] == pytest.approx(off["total_s"] - on["panel_hidden_s"], rel=1e-12)
    assert on["phases"]["panel"] >= off["phases"]["panel"] / 20480 * 512  # the first panel



_MPI = """
import numpy as np
from mpi4py import MPI
from ozaki import distributed as D
from ozaki.distributed import lu as dlu
from tme_model.hpl_network import hpl_traffic, solve_traffic
comm, bad = MPI.COMM_WORLD, 0
for shape, n, nb in (((2, 2), 37, 8), ((1, 4), 48, 16), ((4, 1), 20, 32)):
    with D.make_grid(shape, comm) as g:
        rng = np.random.default_rng(n)
        A, b = rng.random((n, n)) - 0.5, rng.random((n, 1)) - 0.5
        A, b = (A, b) if comm.rank == 0 else (None, None)
        DA, DB = D.scatter(A, g, block_size=nb), D.scatter(b, g, block_size=nb)
        for f, s in ((D.lu_factor, D.lu_solve), (dlu.native_lu_factor, dlu.native_lu_solve)):
            lu, piv, info = f(DA, return_info=True)
            x, sinfo = s((lu, piv), DB, return_info=True)
            for model, tr in ((hpl_traffic(n, nb, g.P, g.Q, g.p, g.q, piv=piv), info.traffic),
                              (solve_traffic(n, nb, g.P, g.Q, g.p, g.q, piv=piv), sinfo.traffic)):
                got = {k: tuple(v) for k, v in tr.by_kind.items() if k != "decisions"}
                bad += any(tuple(model.get(k, (0, 0))) != got.get(k, (0, 0))
                           for k in set(model) | set(got))
bad = comm.allreduce(bad)
if comm.rank == 0:
    print("BAD", bad)
"""


@pytest.mark.slow
def test_traffic_equals_ozakis_measured_count_under_mpi(tmp_path):
    pytest.importorskip("mpi4py")
    mpiexec = (shutil.which("mpiexec", path=str(Path(sys.executable).parent))
               or shutil.which("mpiexec"))
    if mpiexec is None:
        pytest.skip("mpiexec not found (the mpi extra)")
    script = tmp_path / "traffic.py"
    script.write_text(_MPI)
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", NUMBA_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([mpiexec, "-n", "4", sys.executable, str(script)], capture_output=True,
                          text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stdout.split() == ["BAD", "0"], done.stdout
