"""Traces, golden traces, cassettes (API snapshots), verify, replay and teacher forcing.

Modules (imported directly; this package imports nothing so `toolgym.runner` can use `trace`):
`trace` (schema, TraceWriter, read_trace), `cassette` (Cassette, CassetteToolSet, Secrets),
`golden` (record_golden, replay_traces, TraceAgent, TaskIndex), `verify` (verify_trace,
Tolerance), `teacher` (TeacherForcedEnv, run_teacher_forced), `commands` (the CLI). See
docs/recorder.md.
"""
