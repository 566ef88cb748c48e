"""What every CToolEval-style app must satisfy: declaration, naming, deterministic seeding, sizes."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from toolgym.mocks.app import App, app_apis, validate_app
from toolgym.mocks.apps.ctool import CTOOL_APPS, resolve_app_names
from toolgym.mocks.store import TemplateCache
from toolgym.mocks.world import MockWorld

MTU_NAMES = {"PlaySong", "AddToPlaylist", "play_music", "LookupSong", "PlayMusic"}
SNAKE = re.compile(r"^[a-z][a-z0-9_]*$")


def test_six_apps_and_at_least_sixty_apis() -> None:
    assert [c.name for c in CTOOL_APPS] == ["express", "messaging", "calendar", "maps", "music", "takeout"]
    assert sum(len(app_apis(c)) for c in CTOOL_APPS) >= 60
    assert all(any(a.write for a in app_apis(c)) for c in CTOOL_APPS)


@pytest.mark.parametrize("cls", CTOOL_APPS, ids=lambda c: c.name)
def test_app_declaration(cls: type[App]) -> None:
    assert validate_app(cls) == []
    for api in app_apis(cls):
        assert SNAKE.match(api.name), api.name
        assert api.name not in MTU_NAMES
        assert all(SNAKE.match(p.name) for p in api.tool.params)
    with MockWorld([cls]) as world:
        tables = world.table_names
        assert tables and all(t.startswith(cls.name + "_") for t in tables), tables
        sizes = {t: len(world.rows(t)) for t in tables}
        assert 500 <= sum(sizes.values()) <= 10000, sizes


@pytest.mark.parametrize("cls", CTOOL_APPS, ids=lambda c: c.name)
def test_seeding_is_deterministic(cls: type[App]) -> None:
    clock = datetime(2024, 1, 1, tzinfo=UTC)
    # separate caches: the seeder really runs twice
    with (
        MockWorld([cls], seed=0, clock=clock, cache=TemplateCache()) as a,
        MockWorld([cls], seed=0, clock=clock, cache=TemplateCache()) as b,
        MockWorld([cls], seed=1, clock=clock, cache=TemplateCache()) as c,
    ):
        assert a.state_hash() == b.state_hash() == a.store.full_hash()
        assert a.state_hash() != c.state_hash()


def test_all_apps_share_one_world_with_shopping_and_banking() -> None:
    classes = resolve_app_names([c.name for c in CTOOL_APPS] + ["shopping", "banking"])
    with MockWorld(classes) as world:
        assert len(world.tools) == sum(len(app_apis(c)) for c in classes)
        assert all(t.category == "app" for t in world.tools)


def test_resolve_app_names_rejects_unknown_names() -> None:
    with pytest.raises(KeyError, match="no mock app 'nope'"):
        resolve_app_names(["nope"])
