"""Developer scripts that (re)build the data shipped in fixtures/ and the generated docs.

They are not part of the installed package; run them from the repository root
(`python scripts/<name>.py` or `python -m scripts.<name>`).
"""
