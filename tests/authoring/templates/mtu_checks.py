"""What the tests of the mtu templates add to template_checks: the group's name and the ids its
seeded worlds make that no user knows."""

from __future__ import annotations

from collections.abc import Sequence

from tests.authoring.templates.template_checks import (
    assert_deterministic,
    assert_no_query_names,
    generated,
)
from tests.authoring.templates.template_checks import assert_every_template_passes as _passes
from toolgym.authoring.generate import Generated, Template

__all__ = ["assert_deterministic", "assert_every_template_passes", "assert_no_secret_ids", "generated"]

# ids a seeded world made that no user knows: a query naming one leaks what only a tool can say
SECRET_COLUMNS = (
    ("mtu_alarms_alarms", "alarm_id"),
    ("mtu_appointments_appointments", "appointment_id"),
    ("mtu_appointments_providers", "provider_id"),
    ("mtu_buses_departures", "departure_id"),
    ("mtu_calendar_events", "event_id"),
    ("mtu_cars_cars", "car_id"),
    ("mtu_contacts_contacts", "contact_id"),
    ("mtu_creative_works", "work_id"),
    ("mtu_events_events", "event_id"),
    ("mtu_flights_schedules", "flight_number"),
    ("mtu_homes_properties", "property_id"),
    ("mtu_hotels_hotels", "hotel_id"),
    ("mtu_library_books", "book_id"),
    ("mtu_movies_movies", "movie_id"),
    ("mtu_music_songs", "song_id"),
    ("mtu_music_playlists", "playlist_id"),
    ("mtu_restaurants_venues", "restaurant_id"),
    ("mtu_rides_vehicles", "license_plate"),
    ("mtu_trains_intercity", "train_id"),
    ("mtu_trains_timetable", "trainID"),
)


def assert_every_template_passes(templates: Sequence[Template], per_template: int = 2) -> Generated:
    return _passes(templates, per_template, group="mtu")


def assert_no_secret_ids(result: Generated) -> None:
    assert_no_query_names(result, SECRET_COLUMNS)
