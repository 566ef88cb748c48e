"""Fixtures the GTA tool tests share."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image as PILImage

from tests.toolservers.tiny_models import skimage_photo


@pytest.fixture(scope="session")
def astronaut(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """scikit-image's astronaut photo (512x512) as a PNG file."""
    path = tmp_path_factory.mktemp("astronaut") / "astronaut.png"
    PILImage.fromarray(skimage_photo("astronaut")).save(path)
    return path
