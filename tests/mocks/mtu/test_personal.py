"""MTU personal apps on their seeded data: alarms, contacts, appointments, calendar."""

from __future__ import annotations

from tests.mocks.mtu import count_rows, fails, make_world


# ---- alarms -------------------------------------------------------------------------------------
def test_alarms_match_by_time_label_and_days() -> None:
    world = make_world("mtu_alarms")
    # 2024-01-01 is a Monday: weekday, everyday and Monday alarms ring today, weekend ones do not
    today = world.call("get_alarm", recurrence=["today"])["alarm_details"]
    labels = {a["label"] for a in today}
    assert {"Wake up", "Gym"} <= labels and "Morning Workout" not in labels
    made = world.call("set_alarm", time="3 pm", label="Meeting", recurrence="today", vibrate=5)
    assert made["time"] == "15:00" and made["recurrence"] == ["2024-01-01"]
    fails(world, "set_alarm", 409, time="15:00", recurrence=["today"])
    fails(world, "set_alarm", 400, time="25:00")
    fails(world, "set_alarm", 400, time="07:00", recurrence=["Firday"])
    renamed = world.call("change_alarm_name", time="07:00", new_name="Workout")
    assert renamed["previous_name"] == "My alarm"
    assert world.call("get_alarm", label="workout")["time"] == "07:00"
    # two alarms at 06:30 after a copy: an ambiguous change is a conflict
    world.call(
        "copy_alarm", source_time="06:30", source_recurrence=["weekdays"], target_recurrence=["Saturday"]
    )
    fails(world, "change_alarm_sound", 409, time="06:30", sound="Waves")
    world.call("change_alarm_sound", time="06:30", recurrence=["Saturday"], sound="Waves", vibrate=2)
    assert world.call("get_alarm", time="06:30", recurrence=["saturday"])["sound"] == "Waves"
    moved = world.call("change_alarm_time", label="Gym", new_time="07:45")
    assert moved["time"] == "07:45"
    before = count_rows(world, "mtu_alarms_alarms")
    assert world.call("cancel_alarm", time="22:30")["cancelled"] == 1
    assert count_rows(world, "mtu_alarms_alarms") == before - 1
    fails(world, "cancel_alarm", 404, time="04:00")
    world.call("AddAlarm", new_alarm_time="16:30", new_alarm_name="Tea")
    assert any(
        a["alarm_name"] == "Tea" and a["alarm_time"] == "16:30" for a in world.call("GetAlarms")["alarms"]
    )
    world.call("cancel_all_alarms")
    assert count_rows(world, "mtu_alarms_alarms") == 0


# ---- contacts -----------------------------------------------------------------------------------
def test_contacts_lifecycle() -> None:
    world = make_world("mtu_contacts")
    made = world.call(
        "add_new_contact", contact_name="Dana Scully", phone_number="415-555-0134", email="d@x.org"
    )
    assert made["phone_numbers"] == ["415-555-0134"]
    fails(world, "add_new_contact", 409, contact_name="dana scully", phone_number="415-555-0199")
    fails(world, "add_new_contact", 400, contact_name="Fox", phone_number="12")
    fails(world, "add_new_contact", 400, contact_name="Fox", phone_number="415-555-0100", email="nope")
    assert world.call("search_contact", phone_number="5550134")["contact_name"] == "Dana Scully"
    updated = world.call(
        "update_contact_information", name="Dana Scully", new_information={"phone_number": "415-555-0200"}
    )
    assert updated["phone_numbers"] == ["415-555-0134", "415-555-0200"]  # no old number given: added
    updated = world.call(
        "update_contact_information",
        name="Dana Scully",
        new_information={"email": "dana@fbi.gov"},
        email="d@x.org",
    )
    assert updated["emails"] == ["dana@fbi.gov"]
    fails(world, "update_contact_information", 400, name="Dana Scully", new_information={"shoe_size": "7"})
    left = world.call("delete_contact_number", contact_name="Dana Scully", number_order=1)
    assert left["phone_numbers"] == ["415-555-0200"]
    fails(world, "delete_contact_number", 404, contact_name="Dana Scully", number_order=3)
    world.call("delete_contact_email", contact_name="Dana Scully")
    shared = world.call("ShareLocation", location="1 Main Street", contact_name="Dana")
    assert shared["contact_name"] == "Dana Scully" and count_rows(world, "mtu_contacts_shares") == 1
    world.call("delete_contact", contact_name="Dana Scully")
    fails(world, "delete_contact", 404, contact_name="Dana Scully")
    fails(world, "ShareLocation", 409, location="x", contact_name="John")  # several Johns


# ---- appointments -------------------------------------------------------------------------------
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


# ---- calendar -----------------------------------------------------------------------------------
def test_calendar_free_time_and_overlaps() -> None:
    world = make_world("mtu_calendar")
    events = world.call("GetEvents", event_date="2024-01-03")["events"]
    slots = world.call("GetAvailableTime", event_date="2024-01-03")["available_slots"]
    busy = {e["event_time"] for e in events}
    assert all(s["available_start_time"] not in busy for s in slots)
    start = slots[-1]["available_start_time"]
    world.call(
        "AddEvent", event_name="Dinner", event_date="2024-01-03", event_location="Home", event_time=start
    )
    fails(
        world,
        "AddEvent",
        409,
        event_name="Dinner 2",
        event_date="2024-01-03",
        event_location="Home",
        event_time=start,
    )
    fails(
        world,
        "AddEvent",
        422,
        event_name="Past",
        event_date="2023-12-01",
        event_location="Home",
        event_time="10:00",
    )
    after = world.call("GetAvailableTime", event_date="2024-01-03")["available_slots"]
    assert all(s["available_start_time"] != start for s in after)
