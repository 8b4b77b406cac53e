"""FFTs through emulated GEMMs (work in progress)."""
