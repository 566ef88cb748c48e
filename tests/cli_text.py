"""A command's output as one line of words: what it says, not how rich boxed and wrapped it."""

from __future__ import annotations


def flat(output: str) -> str:
    """Command output without rich's box drawing and line wrapping (a panel is as wide as the
    terminal: 80 columns on CI, so a message breaks across lines between its borders)."""
    return " ".join(output.replace("│", " ").split())
