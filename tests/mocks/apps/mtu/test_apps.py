"""The MTU app group as a whole: every app in MTU_APPS is well formed."""

from __future__ import annotations

from toolgym.mocks.app import validate_app
from toolgym.mocks.apps.mtu import MTU_APPS


def test_every_app_is_well_formed() -> None:
    names = [cls.name for cls in MTU_APPS]
    assert len(names) == len(set(names)) and all(n.startswith("mtu_") for n in names)
    for cls in MTU_APPS:
        assert validate_app(cls) == [], cls.name
