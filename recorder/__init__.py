"""Golden traces, cassettes (API snapshots), record, replay and verify.

Modules (imported directly): `cassette` (Cassette, CassetteToolSet, Secrets), `golden`
(record_golden, replay_traces, TraceAgent, TaskIndex), `verify` (verify_trace, Tolerance),
`commands` (the CLI). The trace schema itself is a core type (`toolgym.trace`) and teacher
forcing an env mode (`toolgym.envs.teacher`). See docs/recorder.md.
"""

# One import path: this root folder is the package `toolgym.recorder` (through the link toolgym/recorder),
# never a top-level `recorder` package, or every module would exist twice.
if __name__ != "toolgym.recorder":
    raise ImportError(
        f"import toolgym.recorder, not {__name__}: the root folder recorder/ is a subpackage of toolgym"
    )
