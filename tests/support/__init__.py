"""Helpers shared by tests. Tests import from here, never from a conftest (conftests hold fixtures only)."""
