"""MTU Appointments app (toolgym.mocks.apps.mtu.appointments) on its seeded data (real SQLite)."""

from __future__ import annotations

from tests.mocks.apps.mtu import count_rows, fails, make_world


def test_provider_slots_and_the_users_schedule() -> None:
    world = make_world("mtu_appointments")
    dentists = world.call("FindProvider", city="New York", type="dentist")["providers"]
    assert dentists and all("dentist_name" in d and d["city"] == "New York" for d in dentists)
    ratings = [d["average_rating"] for d in dentists]
    assert ratings == sorted(ratings, reverse=True)
    stylists = world.call("FindProvider", city="SF", is_unisex=True)["providers"]
    assert all(s["is_unisex"] for s in stylists)
    name = dentists[0]["dentist_name"]
    args = {"dentist_name": name, "appointment_date": "2024-01-05"}
    free = next(
        t
        for t in ("10:00", "10:30", "11:00", "11:30", "14:00", "14:30", "15:00")
        if not world.rows(
            "mtu_appointments_appointments",
            {
                "appointment_date": "2024-01-05",
                "appointment_time": t,
                "appointment_type": "dentist",
                "status": "scheduled",
            },
        )
    )
    booked = world.call("BookAppointment", **args, appointment_time=free)
    fails(world, "BookAppointment", 409, **args, appointment_time=free)
    fails(world, "BookAppointment", 422, **args, appointment_time="03:00")
    fails(
        world, "BookAppointment", 422, **{**args, "appointment_date": "2024-01-07"}, appointment_time=free
    )  # Sunday
    fails(
        world, "BookAppointment", 404, doctor_name=name, appointment_date="2024-01-05", appointment_time=free
    )
    fails(world, "BookAppointment", 400, appointment_date="2024-01-05", appointment_time=free)
    mine = world.call("get_user_appointments", date="2024-01-05", type="dentist")
    assert booked["appointment_id"] in [a["appointment_id"] for a in mine["appointments"]]
    reminder = world.call(
        "set_appointment_reminder",
        appointment_name="Dentist",
        appointment_date="2024-01-05",
        appointment_time=free,
        appointment_address=booked["address"],
        reminder_time="2 hours before",
    )
    assert reminder["appointment_id"] == booked["appointment_id"]
    fails(
        world,
        "set_appointment_reminder",
        409,
        appointment_name="Dentist",
        appointment_date="2024-01-05",
        appointment_time=free,
        appointment_address=booked["address"],
        reminder_time="2 hours before",
    )
    later = f"{int(free[:2]) + 1:02d}:{free[3:]}"
    moved = world.call(
        "change_appointment", appointment_name=name, appointment_date="2024-01-05", new_appointment_time=later
    )
    assert moved["appointment_time"] == later
    assert world.rows("mtu_appointments_reminders")[0]["remind_at"].startswith(
        f"2024-01-05T{int(later[:2]) - 2:02d}:{later[3:]}"
    )
    world.call("delete_appointment", appointment_name=name, appointment_time=later)
    assert count_rows(world, "mtu_appointments_reminders") == 0
    fails(world, "delete_appointment", 404, appointment_name=name, appointment_time=later)
