import os
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# Under pytest-xdist (``make test``) each worker keeps its own numba disk cache, set here
# before numba is imported, and the subprocesses its tests start inherit it. numba's
# cache is not safe for processes that save different specialisations of one function
# at once: each reads the index, picks the first free data file and writes both, so two
# such saves can leave an index entry that names the other's compiled code.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if _WORKER and "NUMBA_CACHE_DIR" not in os.environ:
    os.environ["NUMBA_CACHE_DIR"] = os.path.join(ROOT, ".numba_cache", _WORKER)

settings.register_profile("default", deadline=None, max_examples=60,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", deadline=None, max_examples=40, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else "default")


@pytest.fixture
def rng():
    return np.random.default_rng(20261129)


@pytest.fixture(autouse=True)
def _emulated_path(request, monkeypatch):
    """The suite's tests of the emulation run it on small products: there the
    small-product path (:mod:`ozaki.core.compensated`) is off, unless a test is marked
    ``compensated`` (tests/test_compensated.py tests that path and its rule)."""
    if request.node.get_closest_marker("compensated") is None:
        from ozaki.core import compensated
        monkeypatch.setattr(compensated, "SMALL_WORK", 0)
