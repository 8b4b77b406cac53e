"""FP64-grade FFTs whose multiplications run through ozaki's emulated GEMMs.

Import it as ``import fft`` (the distribution ``ozaki-emu`` installs the
package ``fft`` beside ``ozaki``). The functions have :mod:`scipy.fft`'s
signatures; :data:`scipy_backend` plugs them into ``scipy.fft.set_backend``.

>>> import numpy as np, fft
>>> x = np.arange(8.0)
>>> bool(np.allclose(fft.fft(x), np.fft.fft(x)))
True
"""

from .plan import DENSE_LIMIT, MAX_RADIX, Plan, StageRecord, factorize
from .records import stage_records
from .transforms import (fft, fft2, fftn, get_plan, hfft, hfft2, hfftn, ifft, ifft2,
                         ifftn, ihfft, ihfft2, ihfftn, irfft, irfft2, irfftn, rfft, rfft2,
                         rfftn)
from .realtransforms import dct, dctn, dst, dstn, idct, idctn, idst, idstn
from . import scipy_backend

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2",
           "irfft2", "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn",
           "ihfftn", "dct", "idct", "dst", "idst", "dctn", "idctn", "dstn", "idstn", "Plan",
           "get_plan", "factorize", "stage_records", "StageRecord", "scipy_backend",
           "MAX_RADIX", "DENSE_LIMIT"]
