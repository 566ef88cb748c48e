"""Real tools and their model backends, the tool server and its clients, server hosting."""

# One import path: this root folder is the package `toolgym.toolservers` (through the link toolgym/toolservers),
# never a top-level `toolservers` package, or every module would exist twice.
if __name__ != "toolgym.toolservers":
    raise ImportError(
        f"import toolgym.toolservers, not {__name__}: the root folder toolservers/ is a subpackage of toolgym"
    )
