"""Backends that run servers (the mock service, tool servers): Docker containers through the
`docker` SDK (`ContainerHost`) and sandboxed local processes (`ProcessHost`), behind one
interface, `ServerHost`: start(spec) -> a healthy handle, stop, restart, logs."""
