"""Templates of the everyday `mtu` apps: weather, alarms, smart home, calendar, contacts, banking.

The user is the one person these apps serve ("me"): they know their own account numbers (123456,
7891011, ...), the names of their alarms, rooms, doors and contacts, never an id a tool made.
"""

from __future__ import annotations

import json
from typing import Any

from toolgym.authoring.generate import Draft, Skip, Template
from toolgym.authoring.templates.common import money, plain, round_amount
from toolgym.authoring.templates.mtu_shared import (
    NEW_NAMES,
    future_day,
    one,
    plural,
    spoken_day,
    spoken_time,
    today,
)

WEATHER = ("mtu_weather",)
ALARMS = ("mtu_alarms",)
HOME = ("mtu_smart_home",)
CALENDAR = ("mtu_calendar",)
CONTACTS = ("mtu_contacts",)
BANK = ("mtu_banking",)


# ---- weather -------------------------------------------------------------------------------------
def _place(d: Draft) -> str:
    return str(d.pick("SELECT name FROM mtu_weather_places ORDER BY place_id")["name"])


def forecast(d: Draft) -> None:
    place, day = _place(d), future_day(d, 0, 28)
    d.query(
        [
            "What's the weather going to be like in {p} {w}?",
            "Can you check the forecast for {p} {w}?",
            "How's the weather looking in {p} {w}?",
            "I'm heading to {p}. What will the weather be {w}?",
            "Tell me the weather in {p} {w}, please.",
        ],
        p=place,
        w=spoken_day(d, day),
    )
    w = d.call("GetWeather", city=place, date=day.isoformat())
    d.answer(
        f"In {place} on {w['date']}: {w['conditions']}, a high of {w['temperature']} F and a low of"
        f" {w['temperature_low']} F, {w['precipitation']} chance of precipitation.",
        w["conditions"],
        str(w["temperature"]),
    )


def rain_chance(d: Draft) -> None:
    place, day = _place(d), future_day(d, 1, 28)
    d.query(
        [
            "Should I pack an umbrella for {p} {w}? What's the chance of rain?",
            "How likely is rain in {p} {w}?",
            "What are the odds of precipitation in {p} {w}?",
        ],
        p=place,
        w=spoken_day(d, day),
    )
    w = d.call("GetWeather", city=place, date=day.isoformat())
    d.answer(
        f"{place} on {w['date']} has a {w['precipitation']} chance of precipitation ({w['conditions']}).",
        w["precipitation"].rstrip("%"),
    )


def warmer_city(d: Draft) -> None:
    a, b = d.rng.sample(
        [
            str(r["name"])
            for r in d.rows("SELECT name FROM mtu_weather_places WHERE kind = 'city' ORDER BY place_id")
        ],
        2,
    )
    day = future_day(d, 0, 28)
    d.query(
        [
            "Which will be warmer {w}, {a} or {b}?",
            "I can't decide between {a} and {b} for a trip {w}. Where is it warmer?",
            "Compare the high temperatures of {a} and {b} {w} for me.",
        ],
        a=a,
        b=b,
        w=spoken_day(d, day),
    )
    wa = d.call("GetWeather", city=a, date=day.isoformat())
    wb = d.call("GetWeather", city=b, date=day.isoformat())
    if wa["temperature"] == wb["temperature"]:
        raise Skip("same temperature")
    warm, cold = (wa, wb) if wa["temperature"] > wb["temperature"] else (wb, wa)
    d.answer(
        f"{warm['city']} will be warmer: a high of {warm['temperature']} F against {cold['temperature']} F"
        f" in {cold['city']}.",
        warm["city"],
        str(warm["temperature"]),
    )


def forecast_ask_place(d: Draft) -> None:
    place, day = _place(d), future_day(d, 1, 20)
    d.query(
        [
            "I'm travelling {w}. What will the weather be like where I'm going?",
            "Can you get me the forecast for my trip {w}?",
            "What's the weather at my destination {w}?",
        ],
        w=spoken_day(d, day),
    )
    said = d.ask(
        "city", place, "Sure. Which city or place are you travelling to?", keywords=["where", "place"]
    )
    w = d.call("GetWeather", city=said, date=day.isoformat())
    d.answer(
        f"In {place} on {w['date']}: {w['conditions']}, high {w['temperature']} F, low {w['temperature_low']} F.",
        w["conditions"],
        str(w["temperature"]),
    )


def refuse_weather_alerts(d: Draft) -> None:
    place = _place(d)
    d.query(
        [
            "Text me an alert whenever a storm is forecast for {p}.",
            "Subscribe me to severe weather warnings for {p}.",
            "Send me a notification every morning with the weather in {p}.",
        ],
        p=place,
    )
    d.refuse((), f"I'm sorry, I can't set up weather alerts for {place}: I can only look up the forecast.")


# ---- alarms -------------------------------------------------------------------------------------
LABELS = (
    "Yoga",
    "Standup meeting",
    "Feed the cat",
    "Water the plants",
    "Leave for work",
    "Call Mom",
    "Laundry",
    "Dentist",
    "School run",
    "Piano practice",
    "Team call",
    "Nap over",
)
DAYS = {
    "weekdays": "on weekdays",
    "weekends": "on weekends",
    "everyday": "every day",
    "Monday": "on Mondays",
    "Tuesday": "on Tuesdays",
    "Wednesday": "on Wednesdays",
    "Thursday": "on Thursdays",
    "Friday": "on Fridays",
    "Saturday": "on Saturdays",
    "Sunday": "on Sundays",
}
SOUNDS = ("Radar", "Chimes", "Birdsong", "Waves", "Beacon", "Classic Bell", "Sunrise")


def _alarm(d: Draft) -> dict[str, Any]:
    # "My alarm" is the default label, no name a person uses for one alarm
    return d.pick("SELECT * FROM mtu_alarms_alarms WHERE label != 'My alarm' ORDER BY alarm_id")


def _clock(d: Draft, low_hour: int, high_hour: int) -> str:
    return f"{d.rng.randint(low_hour, high_hour):02d}:{d.choice([0, 5, 10, 15, 20, 30, 40, 45, 50]):02d}"


def set_alarm(d: Draft) -> None:
    at, label, days = _clock(d, 5, 22), d.choice(LABELS), d.choice(sorted(DAYS))
    d.query(
        [
            "Set an alarm for {t} {r} and call it {l}.",
            "Please add a {l} alarm at {t} {r}.",
            "Wake me at {t} {r}; label the alarm {l}.",
            "I need an alarm called {l} at {t}, {r}.",
        ],
        t=spoken_time(d, at),
        r=DAYS[days],
        l=label,
    )
    result = d.call("set_alarm", time=at, label=label, recurrence=[days])
    d.answer(f"Your {label} alarm is set for {result['time']} {DAYS[days]}.", result["time"])


def set_alarm_with_sound(d: Draft) -> None:
    at, label, days, sound = _clock(d, 5, 11), d.choice(LABELS), d.choice(sorted(DAYS)), d.choice(SOUNDS)
    d.query(
        [
            "Set a {l} alarm at {t} {r} with the {s} sound.",
            "Add an alarm for {t} {r} named {l}, and make it play {s}.",
        ],
        t=spoken_time(d, at),
        r=DAYS[days],
        l=label,
        s=sound,
    )
    result = d.call("set_alarm", time=at, label=label, recurrence=[days], sound=sound)
    d.answer(f"Set: {label} at {result['time']} {DAYS[days]}, sound {result['sound']}.", result["time"])


def alarm_time(d: Draft) -> None:
    alarm = _alarm(d)
    d.query(
        [
            "What time is my {l} alarm set for?",
            "When does my {l} alarm go off?",
            "Remind me what time the {l} alarm rings.",
        ],
        l=alarm["label"],
    )
    found = one(d.call("get_alarm", label=alarm["label"])["alarm_details"], "alarm")
    days = ", ".join(str(x) for x in found["recurrence"])
    d.answer(f"Your {alarm['label']} alarm rings at {found['time']} ({days}).", str(found["time"]))


def alarm_sound(d: Draft) -> None:
    alarm = _alarm(d)
    d.query(
        ["Which sound does my {l} alarm play?", "What ringtone is my {l} alarm using?"],
        l=alarm["label"],
    )
    found = one(d.call("get_alarm", label=alarm["label"])["alarm_details"], "alarm")
    d.answer(f"Your {alarm['label']} alarm plays {found['sound']}.", str(found["sound"]))


def move_alarm(d: Draft) -> None:
    alarm = _alarm(d)
    hour = int(alarm["time"][:2])
    new = _clock(d, max(0, hour - 2), min(23, hour + 2))
    if new == alarm["time"]:
        raise Skip("same time")
    d.query(
        [
            "Move my {l} alarm to {t}.",
            "Change the {l} alarm so it rings at {t} instead.",
            "Can you reset my {l} alarm to {t}?",
        ],
        l=alarm["label"],
        t=spoken_time(d, new),
    )
    result = d.call("change_alarm_time", label=alarm["label"], new_time=new)
    d.answer(
        f"Your {alarm['label']} alarm now rings at {result['time']} (was {result['previous_time']}).", new
    )


def rename_alarm(d: Draft) -> None:
    alarm = _alarm(d)
    new = d.choice(LABELS)
    d.query(
        [
            'Rename my {l} alarm to "{n}".',
            'Call the "{l}" alarm "{n}" from now on.',
            'Change the name of my {t} alarm from "{l}" to "{n}".',
        ],
        l=alarm["label"],
        n=new,
        t=spoken_time(d, alarm["time"]),
    )
    d.call("change_alarm_name", current_name=alarm["label"], new_name=new)
    d.answer(f"Renamed: your {alarm['time']} alarm is now called {new}.", new)


def change_alarm_sound(d: Draft) -> None:
    alarm = _alarm(d)
    sound = d.choice([s for s in SOUNDS if s != alarm["sound"]])
    d.query(
        [
            "Switch my {l} alarm to the {s} sound.",
            "I'd like the {l} alarm to play {s} instead.",
            "Change the ringtone of the {l} alarm to {s}.",
        ],
        l=alarm["label"],
        s=sound,
    )
    d.call("change_alarm_sound", label=alarm["label"], sound=sound)
    d.answer(f"Your {alarm['label']} alarm now plays {sound}.", sound)


def cancel_alarm(d: Draft) -> None:
    alarm = _alarm(d)
    d.query(
        [
            "Delete my {l} alarm.",
            "Cancel the {l} alarm, I don't need it any more.",
            "Please get rid of my {t} {l} alarm.",
        ],
        l=alarm["label"],
        t=spoken_time(d, alarm["time"]),
    )
    d.call("cancel_alarm", label=alarm["label"], recurrence=["everyday"])
    d.answer(f"I cancelled your {alarm['label']} alarm.", "cancelled")


def copy_alarm(d: Draft) -> None:
    alarm = _alarm(d)
    days = json.loads(alarm["recurrence"])
    target = d.choice(
        [
            x
            for x in ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
            if x not in days
        ]
    )
    d.query(
        [
            "Copy my {l} alarm to {t}s as well.",
            "I want the {l} alarm on {t}s too; same time.",
            "Duplicate the {l} alarm for {t}.",
        ],
        l=alarm["label"],
        t=target,
    )
    found = one(d.call("get_alarm", label=alarm["label"])["alarm_details"], "alarm")
    d.call(
        "copy_alarm",
        source_time=found["time"],
        source_recurrence=found["recurrence"],
        target_recurrence=[target],
        label=alarm["label"],
    )
    d.answer(
        f"Your {alarm['label']} alarm now also rings at {found['time']} on {target}s.", str(found["time"])
    )


def one_time_alarm(d: Draft) -> None:
    at, label = _clock(d, 4, 11), d.choice((*LABELS, "Flight", "Catch the train", "Take out the bins"))
    d.query(
        [
            "Set a one-time alarm at {t} called {l}.",
            "Just once: wake me at {t}, label it {l}.",
            "Add a single {l} alarm for {t}; it shouldn't repeat.",
        ],
        t=spoken_time(d, at),
        l=label,
    )
    result = d.call("AddAlarm", new_alarm_time=at, new_alarm_name=label)
    d.answer(
        f"A one-time {label} alarm is set for {result['new_alarm_time']}.", str(result["new_alarm_time"])
    )


def alarm_count(d: Draft) -> None:
    cut = f"{d.choice([6, 7, 8, 9, 10, 12, 15, 18])}:00"
    hhmm = f"{int(cut.split(':')[0]):02d}:00"
    d.query(
        [
            "How many of my alarms ring before {t}?",
            "Which alarms do I have set for earlier than {t}?",
        ],
        t=spoken_time(d, hhmm),
    )
    alarms = d.call("GetAlarms")["alarms"]
    early = [a for a in alarms if a["alarm_time"] < hhmm]
    if not early:
        raise Skip("no early alarm")
    said = ", ".join(f"{a['alarm_name']} at {a['alarm_time']}" for a in early)
    d.answer(f"{plural(len(early), 'alarm')} ring before {hhmm}: {said}.", str(len(early)))


def set_alarm_ask_time(d: Draft) -> None:
    at, label, days = _clock(d, 5, 11), d.choice(LABELS), d.choice(sorted(DAYS))
    d.query(
        [
            "Set a {l} alarm for me {r}.",
            "I want an alarm called {l} {r}.",
        ],
        l=label,
        r=DAYS[days],
    )
    said = d.ask("time", at, "What time should the alarm ring?", keywords=["what time", "when"])
    result = d.call("set_alarm", time=said, label=label, recurrence=[days])
    d.answer(f"Your {label} alarm is set for {result['time']} {DAYS[days]}.", result["time"])


def refuse_snooze(d: Draft) -> None:
    alarm = _alarm(d)
    minutes = d.choice([5, 10, 15, 20])
    d.query(
        [
            "Snooze my {l} alarm for {m} minutes.",
            "Hit snooze on the {l} alarm, {m} more minutes please.",
        ],
        l=alarm["label"],
        m=minutes,
    )
    d.refuse((), f"Sorry, I can't snooze the {alarm['label']} alarm: none of my alarm tools snoozes one.")


def refuse_set_alarm(d: Draft) -> None:
    at, label = _clock(d, 5, 10), d.choice(LABELS)
    d.query(
        ["Set an alarm called {l} for {t} tomorrow.", "Add a {t} alarm named {l}."],
        l=label,
        t=spoken_time(d, at),
    )
    d.refuse(
        ["set_alarm", "AddAlarm", "copy_alarm"],
        "I'm sorry, I cannot create alarms: no tool for that is available to me.",
    )


# ---- smart home ---------------------------------------------------------------------------------
def _room(d: Draft, outdoor: int = 0) -> dict[str, Any]:
    return d.pick("SELECT * FROM mtu_smart_home_rooms WHERE outdoor = ? ORDER BY location", outdoor)


def room_temperature(d: Draft) -> None:
    room = _room(d, d.choice([0, 0, 1]))["location"]
    d.query(
        [
            "What's the temperature in the {r} right now?",
            "How warm is it in the {r}?",
            "Check the current temperature of the {r}, please.",
        ],
        r=room,
    )
    t = d.call("get_current_temperature", location=room)
    d.answer(f"It's {t['temperature']} F in the {room}.", str(t["temperature"]))


def door_status(d: Draft) -> None:
    door = d.pick("SELECT door FROM mtu_smart_home_doors ORDER BY door")["door"]
    d.query(["Is the {x} locked?", "Did I lock the {x}?", "Can you check whether the {x} is locked?"], x=door)
    s = d.call("check_door_status", door_location=door)
    status = s["door_status"]
    d.answer(
        f"The {door} is {status}" + (" and open." if s["is_open"] else "."),
        ["not locked", "unlocked"] if status == "unlocked" else "locked",
    )


def lock_if_unlocked(d: Draft) -> None:
    door = d.pick(
        "SELECT door FROM mtu_smart_home_doors WHERE lock_status = 'unlocked' AND is_open = 0 ORDER BY door"
    )["door"]
    d.query(
        [
            "Check the {x} and lock it if it's unlocked.",
            "I'm in bed: make sure the {x} is locked.",
            "Is the {x} locked? If not, lock it please.",
        ],
        x=door,
    )
    s = d.call("check_door_status", door_location=door)
    if s["door_status"] != "unlocked":
        raise Skip("already locked")
    d.call("lock_door", door_name=door)
    d.answer(f"The {door} was unlocked; I've locked it now.", "locked")


def set_thermostat(d: Draft) -> None:
    room = _room(d)
    target = d.choice([t for t in range(62, 79) if t != room["temperature"]])
    d.query(
        [
            "Set the {r} to {t} degrees.",
            "Please make the {r} {t} F.",
            "Adjust the thermostat in the {r} to {t}.",
        ],
        r=room["location"],
        t=target,
    )
    d.call("adjust_room_temperature", location=room["location"], temperature=target)
    d.answer(f"The {room['location']} is set to {target} F.", str(target))


def warm_up_room(d: Draft) -> None:
    room = _room(d)["location"]
    step = d.choice([2, 3, 4, 5])
    d.query(
        [
            "It's chilly in the {r}. Raise its temperature by {n} degrees.",
            "Make the {r} {n} degrees warmer than it is now.",
            "Turn the heat up {n} degrees in the {r}.",
        ],
        r=room,
        n=step,
    )
    now = d.call("get_current_temperature", location=room)["temperature"]
    d.call("adjust_room_temperature", location=room, temperature=int(now) + step)
    d.answer(f"The {room} was {now} F; I set it to {int(now) + step} F.", str(int(now) + step))


LIGHTS = {
    "on": ("Turn on the lights in the {r}.", "Switch the {r} lights on."),
    "off": ("Turn off the lights in the {r}.", "Switch off the {r} lights, please."),
}


def lights(d: Draft) -> None:
    room = _room(d)
    action = "off" if room["light_on"] else "on"
    phrasings = list(LIGHTS[action])
    d.query(phrasings, r=room["location"])
    d.call("adjust_lighting", location=room["location"], action=action)
    d.answer(f"The lights in the {room['location']} are {action} now.", action)


def dim_lights(d: Draft) -> None:
    room = _room(d)
    level = d.choice([10, 20, 25, 30, 40, 50, 70, 75, 90])
    if level == room["light_intensity"] and room["light_on"]:
        raise Skip("already at that level")
    d.query(
        [
            "Set the {r} lights to {n} percent.",
            "Put the lights in the {r} at {n}% brightness.",
        ]
        + (["Dim the {r} to {n} percent, please."] if level < room["light_intensity"] else []),
        r=room["location"],
        n=level,
    )
    d.call("adjust_lighting", location=room["location"], action="set", intensity=float(level))
    d.answer(f"The {room['location']} lights are at {level}%.", str(level))


MUSIC = ("jazz classics", "morning acoustic", "rainy day piano", "road trip rock", "lofi beats", "80s hits")


def play_home_music(d: Draft) -> None:
    item, room = d.choice(MUSIC), _room(d)["location"]
    volume = d.choice([20, 25, 30, 40, 50, 60])
    d.query(
        [
            "Play {m} in the {r} at volume {v}.",
            "Put on {m} in the {r}, volume {v}.",
            "I'd like some {m} in the {r}; set the volume to {v}.",
        ],
        m=item,
        r=room,
        v=volume,
    )
    d.call("play_music", **{"song/playlist": item, "location": room, "volume": float(volume)})
    d.answer(f"Playing {item} in the {room} at volume {volume}.", item)


def set_thermostat_ask(d: Draft) -> None:
    room = _room(d)
    target = d.choice([t for t in range(62, 79) if t != room["temperature"]])
    d.query(
        ["Please change the thermostat in the {r}.", "I want to adjust the temperature of the {r}."],
        r=room["location"],
    )
    said = d.ask("temperature", str(target), "What temperature would you like?", keywords=["degrees"])
    d.call("adjust_room_temperature", location=room["location"], temperature=int(said))
    d.answer(f"The {room['location']} is set to {target} F.", str(target))


def refuse_lock(d: Draft) -> None:
    door = d.pick("SELECT door FROM mtu_smart_home_doors ORDER BY door")["door"]
    d.query(
        [
            "Lock the {x} for me.",
            "Please lock the {x} now.",
            "I forgot to lock the {x}; can you lock it?",
            "Make sure the {x} gets locked tonight.",
        ],
        x=door,
    )
    d.refuse(["lock_door"], f"I'm sorry, I can't lock the {door}: no lock tool is available to me.")


def refuse_unlock(d: Draft) -> None:
    door = d.pick("SELECT door FROM mtu_smart_home_doors WHERE lock_status = 'locked' ORDER BY door")["door"]
    d.query(
        [
            "Unlock the {x}, my friend is arriving.",
            "Please open the lock on the {x}.",
            "Can you unlock the {x} for the delivery?",
            "Let the dog walker in: unlock the {x}.",
        ],
        x=door,
    )
    d.refuse(
        (), f"Sorry, I cannot unlock the {door}: my smart-home tools can lock doors but not unlock them."
    )


# ---- calendar -----------------------------------------------------------------------------------
EVENTS = (
    "Coffee with Sam",
    "Haircut",
    "Budget review",
    "Book club",
    "Tennis",
    "Parent meeting",
    "Car service",
    "Lunch with Priya",
    "Guitar lesson",
    "Project sync",
)
PLACES = (
    "the office",
    "Blue Bottle Cafe",
    "the community center",
    "City Library",
    "Golden Gate Park",
    "250 Main Street",
    "the tennis club",
    "Union Square",
)


def _busy_day(d: Draft) -> str:
    return str(
        d.pick(
            "SELECT DISTINCT event_date FROM mtu_calendar_events WHERE event_date >= ? ORDER BY event_date",
            today(d).isoformat(),
        )["event_date"]
    )


def _date_of(iso: str) -> Any:
    from datetime import date

    return date.fromisoformat(iso)


def day_events(d: Draft) -> None:
    day = _busy_day(d)
    d.query(
        [
            "What's on my calendar {w}?",
            "What do I have scheduled {w}?",
            "Show me my events {w}.",
            "Am I busy {w}? List my events.",
        ],
        w=spoken_day(d, _date_of(day)),
    )
    events = d.call("GetEvents", event_date=day)["events"]
    if not events:
        raise Skip("no events")
    said = "; ".join(f"{e['event_time']} {e['event_name']}" for e in events)
    d.answer(f"You have {plural(len(events), 'event')} on {day}: {said}.", str(events[0]["event_name"]))


def first_event(d: Draft) -> None:
    day = _busy_day(d)
    d.query(
        [
            "What's my first appointment {w}, and where is it?",
            "When does my day start {w}? What's the first thing on my calendar?",
        ],
        w=spoken_day(d, _date_of(day)),
    )
    first = one(d.call("GetEvents", event_date=day)["events"], "event")
    d.answer(
        f"Your first event on {day} is {first['event_name']} at {first['event_time']}, at {first['event_location']}.",
        str(first["event_time"]),
        str(first["event_name"]),
    )


def free_time(d: Draft) -> None:
    day = future_day(d, 0, 40)
    d.query(
        [
            "When am I free {w}?",
            "What free slots do I have {w}?",
            "Find me the gaps in my schedule {w}.",
        ],
        w=spoken_day(d, day),
    )
    slots = d.call("GetAvailableTime", event_date=day.isoformat())["available_slots"]
    if not slots:
        raise Skip("no free time")
    said = ", ".join(f"{s['available_start_time']}-{s['available_end_time']}" for s in slots)
    d.answer(f"On {day.isoformat()} you are free {said}.", str(slots[0]["available_start_time"]))


def add_event(d: Draft) -> None:
    day = future_day(d, 1, 40)
    name, place = d.choice(EVENTS), d.choice(PLACES)
    at = f"{d.rng.randint(8, 20):02d}:{d.choice(['00', '30'])}"
    d.query(
        [
            "Add {n} to my calendar {w} at {t}, at {p}.",
            "Put {n} at {p} in my calendar for {t} {w}.",
            "Schedule {n} {w} at {t}; the location is {p}.",
        ],
        n=name,
        w=spoken_day(d, day),
        t=spoken_time(d, at),
        p=place,
    )
    d.call("AddEvent", event_name=name, event_date=day.isoformat(), event_location=place, event_time=at)
    d.answer(f"Added {name} on {day.isoformat()} at {at}, at {place}.", name)


def add_event_first_free(d: Draft) -> None:
    day = future_day(d, 1, 40)
    name, place = d.choice(EVENTS), d.choice(PLACES)
    d.query(
        [
            "Find my first free hour {w} and put {n} at {p} there.",
            "Book {n} ({p}) into the earliest free slot on my calendar {w}.",
            "Whenever I'm first free {w}, schedule {n} at {p}.",
        ],
        w=spoken_day(d, day),
        n=name,
        p=place,
    )
    slot = one(d.call("GetAvailableTime", event_date=day.isoformat())["available_slots"], "free slot")
    at = str(slot["available_start_time"])
    d.call("AddEvent", event_name=name, event_date=day.isoformat(), event_location=place, event_time=at)
    d.answer(f"Your first free time on {day.isoformat()} starts at {at}; I put {name} there.", at)


def add_event_ask_place(d: Draft) -> None:
    day = future_day(d, 1, 40)
    name, place = d.choice(EVENTS), d.choice(PLACES)
    at = f"{d.rng.randint(8, 20):02d}:00"
    d.query(
        ["Add {n} to my calendar {w} at {t}.", "Schedule {n} for {t} {w}."],
        n=name,
        w=spoken_day(d, day),
        t=spoken_time(d, at),
    )
    said = d.ask("location", place, "Where will it take place?", keywords=["where"])
    d.call("AddEvent", event_name=name, event_date=day.isoformat(), event_location=said, event_time=at)
    d.answer(f"Added {name} on {day.isoformat()} at {at}, at {place}.", name)


def refuse_delete_event(d: Draft) -> None:
    day = _busy_day(d)
    event = d.pick("SELECT event_name FROM mtu_calendar_events WHERE event_date = ? ORDER BY event_id", day)
    d.query(
        ["Delete {n} from my calendar {w}.", "Remove the {n} event {w}, it's off."],
        n=event["event_name"],
        w=spoken_day(d, _date_of(day)),
    )
    d.refuse((), f"I'm sorry, I can't remove {event['event_name']}: my calendar tools cannot delete events.")


# ---- contacts -----------------------------------------------------------------------------------
def _contact(d: Draft, having: str) -> dict[str, Any]:
    return d.pick(
        f"SELECT c.contact_name FROM mtu_contacts_contacts c WHERE EXISTS (SELECT 1 FROM {having} x"
        " WHERE x.contact_id = c.contact_id) ORDER BY c.contact_name"
    )


def phone_number(d: Draft) -> None:
    name = _contact(d, "mtu_contacts_phones")["contact_name"]
    d.query(
        ["What's {n}'s phone number?", "Can you look up the number for {n}?", "How do I reach {n} by phone?"],
        n=name,
    )
    c = one(d.call("search_contact", contact_name=name)["contacts"], "contact")
    d.answer(f"{name}'s number is {c['phone_number']}.", str(c["phone_number"]))


def email_address(d: Draft) -> None:
    name = _contact(d, "mtu_contacts_emails")["contact_name"]
    d.query(
        ["What's the email address of {n}?", "Find {n}'s email for me.", "Which email do I have for {n}?"],
        n=name,
    )
    c = one(d.call("search_contact", contact_name=name)["contacts"], "contact")
    d.answer(f"{name}'s email is {c['email']}.", str(c["email"]))


def who_has_number(d: Draft) -> None:
    row = d.pick(
        "SELECT p.phone_number, c.contact_name FROM mtu_contacts_phones p JOIN mtu_contacts_contacts c"
        " USING (contact_id) ORDER BY p.phone_id"
    )
    d.query(
        ["Whose number is {p}?", "I got a missed call from {p}. Is that someone in my contacts?"],
        p=row["phone_number"],
    )
    c = one(d.call("search_contact", phone_number=row["phone_number"])["contacts"], "contact")
    d.answer(f"{row['phone_number']} belongs to {c['contact_name']}.", str(c["contact_name"]))


def _new_phone(d: Draft) -> str:
    return f"{d.rng.randint(201, 989)}-{d.rng.randint(200, 999)}-{d.rng.randint(1000, 9999)}"


def add_contact(d: Draft) -> None:
    name, phone = d.choice(NEW_NAMES), _new_phone(d)
    email = f"{name.split()[0].lower()}.{name.split()[1].lower()}@example.com"
    with_email = d.rng.random() < 0.5
    d.query(
        [
            "Add {n} to my contacts, number {p}{e}.",
            "Save a new contact: {n}, phone {p}{e}.",
            "Please create a contact for {n} with the number {p}{e}.",
        ],
        n=name,
        p=phone,
        e=f", email {email}" if with_email else "",
    )
    args = {"contact_name": name, "phone_number": phone}
    if with_email:
        args["email"] = email
    d.call("add_new_contact", **args)
    d.answer(f"{name} is saved with the number {phone}.", name)


def update_email(d: Draft) -> None:
    name = _contact(d, "mtu_contacts_phones")["contact_name"]
    handle = name.split()[0].lower()
    email = f"{handle}{d.rng.randint(1, 99)}@{d.choice(['gmail.com', 'outlook.com', 'proton.me'])}"
    d.query(
        [
            "Add the email {e} to {n}'s contact.",
            "{n} has a new email address, {e}; please save it.",
            "Update {n}'s contact with the email {e}.",
        ],
        n=name,
        e=email,
    )
    d.call("update_contact_information", name=name, new_information={"email": email})
    d.answer(f"Saved {email} for {name}.", email)


def update_address(d: Draft) -> None:
    name = _contact(d, "mtu_contacts_phones")["contact_name"]
    address = (
        f"{d.rng.randint(10, 2999)} {d.choice(['Oak Street', 'Pine Avenue', 'Lake Road', 'Hill Street'])}"
    )
    d.query(["{n} moved to {a}; update the address.", "Change {n}'s address to {a}."], n=name, a=address)
    d.call("update_contact_information", name=name, new_information={"address": address})
    d.answer(f"{name}'s address is now {address}.", address)


def delete_contact(d: Draft) -> None:
    name = _contact(d, "mtu_contacts_phones")["contact_name"]
    d.query(
        [
            "Delete {n} from my contacts.",
            "Remove the contact {n}, please.",
            "I don't need {n} in my phone any more; delete them.",
        ],
        n=name,
    )
    d.call("delete_contact", contact_name=name)
    d.answer(f"{name} is deleted from your contacts.", name)


def delete_email(d: Draft) -> None:
    row = d.pick(
        "SELECT c.contact_name, e.email FROM mtu_contacts_emails e JOIN mtu_contacts_contacts c USING (contact_id)"
        " ORDER BY e.email_id"
    )
    d.query(
        [
            "Remove the email {e} from {n}'s contact.",
            "{n} no longer uses {e}; delete it from their contact.",
            "Delete {e} from {n} in my contacts.",
        ],
        n=row["contact_name"],
        e=row["email"],
    )
    d.call("delete_contact_email", contact_name=row["contact_name"], contact_email=row["email"])
    d.answer(f"I deleted {row['email']} from {row['contact_name']}.", str(row["email"]))


def delete_number(d: Draft) -> None:
    row = d.pick(
        "SELECT c.contact_name, p.phone_number FROM mtu_contacts_phones p JOIN mtu_contacts_contacts c USING (contact_id)"
        " WHERE (SELECT count(*) FROM mtu_contacts_phones o WHERE o.contact_id = p.contact_id) > 1 ORDER BY p.phone_id"
    )
    d.query(
        [
            "Delete the number {p} from {n}'s contact.",
            "{p} isn't {n}'s number any more; remove it.",
        ],
        n=row["contact_name"],
        p=row["phone_number"],
    )
    d.call("delete_contact_number", contact_name=row["contact_name"], contact_number=row["phone_number"])
    d.answer(f"Removed {row['phone_number']} from {row['contact_name']}.", str(row["phone_number"]))


def share_location(d: Draft) -> None:
    name = _contact(d, "mtu_contacts_phones")["contact_name"]
    place = d.choice((*PLACES, "Ferry Building", "the train station", "Pier 39", "the airport"))
    d.query(
        [
            "Send {n} my location: {p}.",
            "Share my location with {n}; I'm at {p}.",
            "Let {n} know where I am, {p}.",
        ],
        n=name,
        p=place,
    )
    d.call("ShareLocation", contact_name=name, location=place)
    d.answer(f"I shared {place} with {name}.", name)


def add_contact_ask_number(d: Draft) -> None:
    name, phone = d.choice(NEW_NAMES), _new_phone(d)
    d.query(["Add {n} to my contacts.", "Save {n} as a new contact."], n=name)
    said = d.ask("phone_number", phone, "What's their phone number?", keywords=["number"])
    d.call("add_new_contact", contact_name=name, phone_number=said)
    d.answer(f"{name} is saved with the number {phone}.", name)


def refuse_call(d: Draft) -> None:
    name = _contact(d, "mtu_contacts_phones")["contact_name"]
    d.query(["Call {n} for me.", "Ring {n} now, please.", "Start a video call with {n}."], n=name)
    d.refuse((), f"Sorry, I can't place calls: my tools manage contacts but cannot call {name}.")


# ---- banking ------------------------------------------------------------------------------------
FRIENDS = "SELECT name FROM mtu_banking_friends ORDER BY name"
REASONS = (
    "I lost my card",
    "I see charges I don't recognise",
    "my wallet was stolen",
    "I'm travelling and won't use it",
)


def _account(d: Draft, status: str = "active") -> dict[str, Any]:
    return d.pick("SELECT * FROM mtu_banking_accounts WHERE status = ? ORDER BY account_number", status)


def balance(d: Draft) -> None:
    account = _account(d)["account_number"]
    d.query(
        [
            "How much money is in my account {a}?",
            "What's the balance of account {a}?",
            "Check my balance on account number {a}, please.",
        ],
        a=account,
    )
    b = d.call("get_account_balance", account_number=account)
    d.answer(f"Account {account} holds {b['balance']}.", plain(b["balance_amount"]))


def balance_by_type(d: Draft) -> None:
    kind = d.choice(["checking", "savings"])
    d.query(
        [
            "How much do I have in my {k} account?",
            "What's my {k} balance?",
            "Check my {k} account balance.",
            "What's left in {k} right now?",
            "Tell me my {k} account's balance, please.",
        ],
        k=kind,
    )
    b = d.call("CheckBalance", account_type=kind)
    d.answer(f"Your {kind} account has ${money(b['balance'])}.", plain(b["balance"]))


def last_of_type(d: Draft) -> None:
    account = _account(d)["account_number"]
    kind = d.choice(["deposit", "withdrawal", "purchase", "payment"])
    d.query(
        [
            "What was the most recent {k} on account {a}?",
            "Show me the last {k} on my account {a}: how much, and when?",
        ],
        a=account,
        k=kind,
    )
    txns = d.call("get_recent_transactions", account_number=account, transaction_type=kind)["transactions"]
    t = one(txns, kind)
    d.answer(
        f"The last {kind} on {account} was ${money(abs(t['amount']))} on {t['date']} ({t['description']}).",
        plain(abs(t["amount"])),
        str(t["date"]),
    )


def transfer_between(d: Draft) -> None:
    owner = d.pick(
        "SELECT customer_id FROM mtu_banking_accounts WHERE status = 'active' GROUP BY customer_id"
        " HAVING count(*) = 2 ORDER BY customer_id"
    )["customer_id"]
    accounts = d.rows("SELECT * FROM mtu_banking_accounts WHERE customer_id = ? ORDER BY account_type", owner)
    source, target = (accounts[0], accounts[1]) if d.rng.random() < 0.5 else (accounts[1], accounts[0])
    amount = round_amount(d.rng, 20, min(1500, source["balance_cents"] // 100), 10)
    d.query(
        [
            "Transfer ${x} from my {f} account {a} to my {t} account {b} right now.",
            "Move ${x} from {a} to {b}, please.",
            "Please send ${x} from account {a} over to {b} immediately.",
        ],
        x=amount,
        a=source["account_number"],
        b=target["account_number"],
        f=source["account_type"],
        t=target["account_type"],
    )
    r = d.call(
        "transfer_funds",
        account_number=source["account_number"],
        source_account=source["account_number"],
        destination_account=target["account_number"],
        amount=float(amount),
        transfer_speed="now",
    )
    d.answer(
        f"Done: ${amount} moved; {source['account_number']} now holds ${money(r['source_balance'])}.",
        plain(r["source_balance"]),
    )


def pay_friend(d: Draft) -> None:
    friend = d.pick(FRIENDS)["name"]
    amount = d.choice([5, 8, 10, 12, 15, 20, 25, 30, 40, 45, 50, 60, 75])
    method = d.choice(["app balance", "debit card", "credit card"])
    d.query(
        [
            "Send ${x} to {f} using my {m}.",
            "Pay {f} ${x} from my {m}.",
            "I owe {f} ${x}; pay them with my {m}, please.",
        ],
        x=amount,
        f=friend,
        m=method,
    )
    d.call("MakePayment", payment_method=method, amount=float(amount), receiver=friend)
    d.answer(f"Sent ${amount} to {friend} from your {method}.", friend)


def request_money(d: Draft) -> None:
    friend = d.pick(FRIENDS)["name"]
    amount = d.choice([6, 9, 12, 14, 18, 22, 35, 48, 55, 70, 90])
    private = d.rng.random() < 0.4
    d.query(
        [
            "Request ${x} from {f}{p}.",
            "Ask {f} to pay me back ${x}{p}.",
            "{F} owes me ${x}; send them a payment request{p}.",
        ],
        x=amount,
        f=friend,
        F=friend,
        p=" and keep it private" if private else "",
    )
    args: dict[str, Any] = {"receiver": friend, "amount": float(amount)}
    if private:
        args["private_visibility"] = "True"
    d.call("RequestPayment", **args)
    d.answer(f"I sent {friend} a request for ${amount}.", friend)


def freeze(d: Draft) -> None:
    account = _account(d)["account_number"]
    reason = d.choice(REASONS)
    d.query(
        [
            "Freeze my account {a}; {r}.",
            "Please put a hold on account {a} because {r}.",
            "{R}: block account {a} now.",
        ],
        a=account,
        r=reason,
        R=reason[:1].upper() + reason[1:],
    )
    d.call("freeze_bank_account", account_number=account, freeze_reason=reason)
    d.answer(f"Account {account} is frozen.", "frozen")


def top_up_savings(d: Draft) -> None:
    threshold = d.choice([1000, 2000, 3000, 4000, 5000])
    amount = d.choice([100, 200, 250, 300, 500])
    d.query(
        [
            "If my checking balance is over ${t}, move ${x} of it to savings.",
            "Check my checking account, and if it has more than ${t}, transfer ${x} into my savings.",
        ],
        t=threshold,
        x=amount,
    )
    checking = d.call("CheckBalance", account_type="checking")["balance"]
    if checking <= threshold:
        raise Skip("below the threshold")
    r = d.call(
        "transfer_funds",
        account_number="123456",
        source_account="checking",
        destination_account="savings",
        amount=float(amount),
        transfer_speed="now",
    )
    d.answer(
        f"Your checking had ${money(checking)}, so I moved ${amount} to savings; checking now holds"
        f" ${money(r['source_balance'])}.",
        plain(r["source_balance"]),
    )


def pay_friend_ask(d: Draft) -> None:
    friend = d.pick(FRIENDS)["name"]
    amount = d.choice([7, 11, 13, 17, 23, 27, 33, 45, 65])
    d.query(
        ["Send some money to {f} from my app balance.", "I need to pay {f} back through the app balance."],
        f=friend,
    )
    said = d.ask("amount", f"${amount}", "How much should I send?", keywords=["how much"])
    d.call("MakePayment", payment_method="app balance", amount=float(amount), receiver=friend)
    d.answer(f"Sent {said} to {friend} from your app balance.", friend)


def pay_back_dinner(d: Draft) -> None:
    friend = d.pick("SELECT name FROM mtu_banking_friends ORDER BY name")["name"]
    amount = d.choice([18, 24, 30, 36, 42, 48, 60, 72, 90])
    d.query(
        [
            "{f} paid for dinner; send them ${x} with my debit card and tell me what's left in checking.",
            "Pay {f} ${x} with my debit card for last night's dinner, then check my checking balance.",
        ],
        f=friend,
        x=amount,
    )
    d.call("MakePayment", payment_method="debit card", amount=float(amount), receiver=friend)
    left = d.call("CheckBalance", account_type="checking")["balance"]
    d.answer(f"Sent ${amount} to {friend}; your checking account now holds ${money(left)}.", plain(left))


def refuse_close_account(d: Draft) -> None:
    account = _account(d)["account_number"]
    d.query(["Close my account {a} permanently.", "Shut down account {a}, I'm switching banks."], a=account)
    d.refuse((), f"I'm sorry, I can't close account {account}: no tool of mine closes accounts.")


def refuse_freeze(d: Draft) -> None:
    account = _account(d)["account_number"]
    d.query(["Freeze account {a} right away, I lost my card.", "Block my account {a}, please."], a=account)
    d.refuse(["freeze_bank_account"], f"I'm unable to freeze {account}: no freeze tool is available to me.")


TEMPLATES = [
    Template("mtu.weather.forecast", WEATHER, forecast),
    Template("mtu.weather.rain_chance", WEATHER, rain_chance),
    Template("mtu.weather.warmer_city", WEATHER, warmer_city),
    Template("mtu.weather.ask_place", WEATHER, forecast_ask_place),
    Template("mtu.weather.refuse_alerts", WEATHER, refuse_weather_alerts),
    Template("mtu.alarms.set", ALARMS, set_alarm),
    Template("mtu.alarms.set_with_sound", ALARMS, set_alarm_with_sound),
    Template("mtu.alarms.time_of", ALARMS, alarm_time),
    Template("mtu.alarms.sound_of", ALARMS, alarm_sound),
    Template("mtu.alarms.move", ALARMS, move_alarm),
    Template("mtu.alarms.rename", ALARMS, rename_alarm),
    Template("mtu.alarms.change_sound", ALARMS, change_alarm_sound),
    Template("mtu.alarms.cancel", ALARMS, cancel_alarm),
    Template("mtu.alarms.copy", ALARMS, copy_alarm),
    Template("mtu.alarms.one_time", ALARMS, one_time_alarm),
    Template("mtu.alarms.count_before", ALARMS, alarm_count),
    Template("mtu.alarms.ask_time", ALARMS, set_alarm_ask_time),
    Template("mtu.alarms.refuse_snooze", ALARMS, refuse_snooze),
    Template("mtu.alarms.refuse_set", ALARMS, refuse_set_alarm),
    Template("mtu.smart_home.temperature", HOME, room_temperature),
    Template("mtu.smart_home.door_status", HOME, door_status),
    Template("mtu.smart_home.lock_if_unlocked", HOME, lock_if_unlocked),
    Template("mtu.smart_home.set_thermostat", HOME, set_thermostat),
    Template("mtu.smart_home.warm_up", HOME, warm_up_room),
    Template("mtu.smart_home.lights", HOME, lights),
    Template("mtu.smart_home.dim_lights", HOME, dim_lights),
    Template("mtu.smart_home.play_music", HOME, play_home_music),
    Template("mtu.smart_home.ask_temperature", HOME, set_thermostat_ask),
    Template("mtu.smart_home.refuse_lock", HOME, refuse_lock),
    Template("mtu.smart_home.refuse_unlock", HOME, refuse_unlock),
    Template("mtu.calendar.day_events", CALENDAR, day_events),
    Template("mtu.calendar.first_event", CALENDAR, first_event),
    Template("mtu.calendar.free_time", CALENDAR, free_time),
    Template("mtu.calendar.add_event", CALENDAR, add_event),
    Template("mtu.calendar.add_at_first_free", CALENDAR, add_event_first_free),
    Template("mtu.calendar.ask_place", CALENDAR, add_event_ask_place),
    Template("mtu.calendar.refuse_delete", CALENDAR, refuse_delete_event),
    Template("mtu.contacts.phone_number", CONTACTS, phone_number),
    Template("mtu.contacts.email", CONTACTS, email_address),
    Template("mtu.contacts.whose_number", CONTACTS, who_has_number),
    Template("mtu.contacts.add", CONTACTS, add_contact),
    Template("mtu.contacts.update_email", CONTACTS, update_email),
    Template("mtu.contacts.update_address", CONTACTS, update_address),
    Template("mtu.contacts.delete", CONTACTS, delete_contact),
    Template("mtu.contacts.delete_email", CONTACTS, delete_email),
    Template("mtu.contacts.delete_number", CONTACTS, delete_number),
    Template("mtu.contacts.share_location", CONTACTS, share_location),
    Template("mtu.contacts.ask_number", CONTACTS, add_contact_ask_number),
    Template("mtu.contacts.refuse_call", CONTACTS, refuse_call),
    Template("mtu.banking.balance", BANK, balance),
    Template("mtu.banking.balance_by_type", BANK, balance_by_type),
    Template("mtu.banking.last_of_type", BANK, last_of_type),
    Template("mtu.banking.transfer", BANK, transfer_between),
    Template("mtu.banking.pay_friend", BANK, pay_friend),
    Template("mtu.banking.request_money", BANK, request_money),
    Template("mtu.banking.freeze", BANK, freeze),
    Template("mtu.banking.top_up_savings", BANK, top_up_savings),
    Template("mtu.banking.ask_amount", BANK, pay_friend_ask),
    Template("mtu.banking.pay_then_balance", BANK, pay_back_dinner),
    Template("mtu.banking.refuse_close", BANK, refuse_close_account),
    Template("mtu.banking.refuse_freeze", BANK, refuse_freeze),
]

__all__ = ["TEMPLATES"]
