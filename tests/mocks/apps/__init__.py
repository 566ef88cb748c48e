"""Tests of the mock apps, one module per app module (tests/ + the source path, test_ prefix)."""
