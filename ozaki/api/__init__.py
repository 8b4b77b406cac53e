"""The public front: argument checking, options, the call path to :mod:`ozaki.core`."""
