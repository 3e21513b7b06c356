"""Shared test helpers: stand-in servers, fixtures' data and renderers that several test modules use.

Imported by tests, never collected (no test_*.py here), so no test module imports another.
"""
