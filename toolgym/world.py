"""The contract between ToolEnv and a stateful world (mock apps): the env resets it per episode,
asks it for its tools, its canonical state hash and the diff each step made."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from toolgym.tools import ToolSet


@runtime_checkable
class World(Protocol):
    def reset(self, *, seed: int, clock: datetime) -> None:
        """Back to the initial state for this seed and clock. Must cost O(changes), not O(rows)."""

    @property
    def tools(self) -> ToolSet:
        """The world's APIs as tools bound to this world's state."""

    def state_hash(self) -> str:
        """Canonical hash of the whole state (sha256 hex)."""

    def take_diff(self) -> dict[str, Any]:
        """Rows added/removed/changed per table since the previous take_diff (or reset)."""

    def checkpoint(self, name: str) -> None: ...

    def restore(self, name: str) -> None: ...

    def fork(self) -> World:
        """An independent copy of the world as it is now."""

    def close(self) -> None: ...


@runtime_checkable
class StateEffects(Protocol):
    """A world whose changes can be captured and made again without running its APIs: what a
    cassette records beside a write call's answer, so that replay moves the state exactly as the
    live call did (later ids, hashes and diffs then match a live run)."""

    def effects_mark(self) -> int:
        """A position to capture changes from."""

    def effects_since(self, mark: int) -> list[Any]:
        """The changes made after `mark`, as JSON."""

    def apply_effects(self, effects: list[Any]) -> None:
        """Make the same changes again (the world is in the state it had at record time)."""
