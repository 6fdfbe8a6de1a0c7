"""Tests of browser; helpers import as tests.browser.<module>."""
