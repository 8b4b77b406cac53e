"""``fft`` as a :mod:`scipy.fft` backend (uarray protocol).

>>> import numpy as np, scipy.fft, fft
>>> with scipy.fft.set_backend(fft.scipy_backend):
...     y = scipy.fft.fft(np.arange(4.0))
>>> bool(np.array_equal(y, fft.fft(np.arange(4.0))))
True

The backend implements every complex-exponential transform of :mod:`scipy.fft`
(the 1-D, 2-D and n-D forms of ``fft``, ``ifft``, ``rfft``, ``irfft``, ``hfft``
and ``ihfft``) and the real-to-real ones (``dct``, ``idct``, ``dst``, ``idst`` and
their n-D forms, :mod:`fft.realtransforms`). It answers ``NotImplemented`` (scipy then
tries its next backend, or raises) for the fast Hankel transforms ``fht``/``ifht``,
for long-double input, which this FP64-grade transform does
not serve, and for arrays of non-numeric dtype (object, strings), which
:mod:`fft` refuses but scipy may convert. With ``only=True``, or as the global
backend with nothing registered behind it, those calls raise; register scipy's
own backend behind it (``scipy.fft.register_backend("scipy")``) to serve them
(docs: "The scipy backend").
"""

from __future__ import annotations

from . import realtransforms, transforms

__all__ = ["__ua_domain__", "__ua_function__"]

__ua_domain__ = "numpy.scipy.fft"

_FUNCTIONS = {name: getattr(transforms, name) for name in
              ("fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2",
               "irfft2", "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn",
               "ihfftn")}
_FUNCTIONS.update((name, getattr(realtransforms, name)) for name in realtransforms.__all__)


def __ua_function__(method, args, kwargs):
    fn = _FUNCTIONS.get(getattr(method, "__name__", None))
    if fn is None:
        return NotImplemented
    x = args[0] if args else kwargs.get("x")
    dtype = getattr(x, "dtype", None)
    if dtype is not None and (dtype.kind not in "biufc" or dtype.itemsize > (
            16 if dtype.kind == "c" else 8)):
        return NotImplemented  # long double, object, strings: scipy's own backend decides
    return fn(*args, **kwargs)
