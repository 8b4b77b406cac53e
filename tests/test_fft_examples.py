"""The examples in the fft package's docstrings run and print what they show."""

import doctest
import importlib

import pytest

MODULES = ["fft", "fft.plan", "fft.records", "fft.scipy_backend"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
