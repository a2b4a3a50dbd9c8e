"""Unit tests of the Python runtime."""
