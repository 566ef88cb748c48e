"""Authoring task sets: checking tasks (`toolgym check`: schema, names, golden replay, oracle, assertions) and generating verified tasks from the mock apps' own APIs and seeded worlds (`toolgym generate`), with the `schema`, `check` and `generate` commands in `commands/`."""

# One import path: this root folder is the package `toolgym.authoring` (through the link toolgym/authoring),
# never a top-level `authoring` package, or every module would exist twice.
if __name__ != "toolgym.authoring":
    raise ImportError(
        f"import toolgym.authoring, not {__name__}: the root folder authoring/ is a subpackage of toolgym"
    )
