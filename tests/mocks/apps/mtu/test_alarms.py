"""MTU Alarms app (toolgym.mocks.apps.mtu.alarms) on its seeded data (real SQLite)."""

from __future__ import annotations

from tests.mocks.apps.mtu import count_rows, fails, make_world


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
