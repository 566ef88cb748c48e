"""Backends that run servers (the mock service, tool servers): Docker containers through the
`docker` SDK (`ContainerBackend`) and sandboxed local processes (`ProcessBackend`), behind one
interface, `ServerBackend`: start(spec) -> a healthy handle, stop, restart, logs."""
