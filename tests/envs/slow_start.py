"""An exception whose module takes `SLOW_START_S` to import. Named in `abort_on`, it makes a rollout
actor slow to start once placed (its EpisodeWorker imports it in its constructor), as the imports
and envs of an actor on a loaded node are."""

from __future__ import annotations

import time

from tests.envs.rollout_agents import SLOW_START_S

time.sleep(SLOW_START_S)


class SlowAbort(Exception):
    """Never raised: only its module's import matters."""
