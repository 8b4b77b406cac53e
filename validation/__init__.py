"""Accuracy validation of ozaki against exact references (run from a checkout)."""
