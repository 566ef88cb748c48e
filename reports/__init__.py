"""What a run becomes: its scores (`toolgym eval`), robustness against fault plans, the HTML report, the trace viewer, training-data and OpenTelemetry exports, and their commands."""

# One import path: this root folder is the package `toolgym.reports` (through the link toolgym/reports),
# never a top-level `reports` package, or every module would exist twice.
if __name__ != "toolgym.reports":
    raise ImportError(
        f"import toolgym.reports, not {__name__}: the root folder reports/ is a subpackage of toolgym"
    )
