"""Readers and writers of the benchmarks' own data formats (to and from toolgym Tasks)."""
