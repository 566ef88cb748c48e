"""Metric suites, one module per benchmark."""
