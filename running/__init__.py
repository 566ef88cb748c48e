"""Running agents over task sets: a run's configuration, plan and trials (every task of some task sets, k trials each, on threads, processes or Ray), its task sources, tool retrieval, and the commands `run` and `teval-*`. (Named `running`, not `runs`: `runs/` is where `toolgym run` and `make demo` write their output.)"""

# One import path: this root folder is the package `toolgym.running` (through the link toolgym/running),
# never a top-level `running` package, or every module would exist twice.
if __name__ != "toolgym.running":
    raise ImportError(
        f"import toolgym.running, not {__name__}: the root folder running/ is a subpackage of toolgym"
    )
