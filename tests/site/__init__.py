"""Tests of site; helpers import as tests.site.<module>."""
