"""Accuracy validation of the ``fft`` package: ``python -m validation.fft [--quick]``.

Every transform is compared, beside ``scipy.fft`` in float64 on the same input, with
``scipy.fft`` on the input widened to long double (64-bit mantissa), itself checked
against a direct DFT in :mod:`mpmath` (:mod:`validation.fft.reference`); the DCT/DST
likewise, their reference checked against scipy's defining sums in mpmath
(:mod:`validation.fft.r2r`). The cases are in :mod:`validation.fft.cases`, the checks
in :mod:`validation.fft.campaign`.
"""
