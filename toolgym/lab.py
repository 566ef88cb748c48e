"""Kept for `from toolgym.lab import Lab, InfraRetry`: the lab lives in `toolgym.envs.lab` (env,
agent and reward) and `toolgym.toolservers.hosting` (servers, hosts, `toolgym lab` commands)."""

from toolgym.envs.lab import Endpoint, InfraRetry, Lab, LabEnv, infra_aware, infra_error_count
from toolgym.toolservers.hosting.lab import HostKind, LabServers, make_host

__all__ = [
    "Endpoint",
    "HostKind",
    "InfraRetry",
    "Lab",
    "LabEnv",
    "LabServers",
    "infra_aware",
    "infra_error_count",
    "make_host",
]
