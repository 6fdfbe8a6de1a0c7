"""The test suite: one package, imported as tests.<folder>.<module> (see tests/conftest.py)."""
