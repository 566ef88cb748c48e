"""Regenerate fixtures/mock_tasks/multiturn.jsonl: multi-turn mock-app tasks with user scenarios.

Every task's query leaves out facts only the user knows (a time, an account number, a message), so
the agent must ask; its golden chain asks (AskUser), calls the apps with the user's facts and
answers. A write made before the user first answers is a minefield (a guess, not what the user said). The golden calls are run here on a fresh world: a failing call stops the script. Run: python scripts/make_multiturn_tasks.py
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from toolgym.actions import AskUser, FinalAnswer, ToolCall
from toolgym.mocks.world import MockWorld
from toolgym.tasks import AnswerSpec, CallFact, GoldenStep, Minefield, Task, TaskSet, UserScenario

OUT = Path(__file__).resolve().parents[1] / "fixtures" / "mock_tasks" / "multiturn.jsonl"
CLOCK = datetime(2024, 1, 1, tzinfo=UTC)


@dataclass
class Draft:
    """One task before its golden calls ran; `state` may need the world after them (balances)."""

    kind: str
    apps: list[str]
    tools: list[str]
    query: str
    question: str
    calls: list[ToolCall]
    scenario: UserScenario
    answer: str
    whitelist: list[list[str]]
    state: list[dict[str, Any]] | Callable[[MockWorld], list[dict[str, Any]]]
    extra_calls_first: list[ToolCall] = field(default_factory=list)  # lookups before the ask


def scenario(
    persona: str,
    goal: str,
    known: dict[str, str],
    *,
    private: list[str] | None = None,
    keywords: dict[str, list[str]] | None = None,
    satisfied_when: str,
    phrases: list[list[str]],
) -> UserScenario:
    return UserScenario(
        persona=persona,
        goal=goal,
        known=known,
        must_not_volunteer=private or [],
        satisfied_when=satisfied_when,
        satisfied_phrases=phrases,
        slot_keywords=keywords or {},
        max_turns=4,
    )


def alarms() -> list[Draft]:
    rows = [
        ("Gym", "06:15", "weekdays"),
        ("Medication", "08:30", "Monday"),
        ("Team standup", "09:45", "weekdays"),
        ("Pick up kids", "15:20", "weekdays"),
        ("Yoga", "07:10", "weekends"),
        ("Bin night", "19:30", "Tuesday"),
    ]
    drafts = []
    for label, time, days in rows:
        drafts.append(
            Draft(
                kind="alarm",
                apps=["mtu_alarms"],
                tools=["set_alarm", "get_alarm", "change_alarm_time"],
                query=f"Please set an alarm called {label} for me.",
                question="What time should it ring, and on which days?",
                calls=[
                    ToolCall(name="set_alarm", arguments={"time": time, "label": label, "recurrence": [days]})
                ],
                scenario=scenario(
                    "A busy parent who plans the week ahead.",
                    f"an alarm called {label}",
                    {"time": time, "days": days},
                    keywords={"time": ["when"], "days": ["day", "which days", "repeat"]},
                    satisfied_when=f"the {label} alarm is set for {time} on {days}",
                    phrases=[[time], [days]],
                ),
                answer=(f"Your {label} alarm is set for {time} on {days}."),
                whitelist=[[time], [days]],
                state=[
                    {
                        "kind": "row_exists",
                        "table": "mtu_alarms_alarms",
                        "where": {"time": time, "label": label, "recurrence": f'["{days}"]'},
                    }
                ],
            )
        )
    return drafts


def contacts() -> list[Draft]:
    rows = [
        ("Fox Mulder", "202-555-0147", "fox.mulder@example.org"),
        ("Walter Skinner", "202-555-0188", "w.skinner@example.org"),
        ("Monica Reyes", "305-555-0112", "monica.reyes@example.com"),
        ("John Doggett", "718-555-0161", "jdoggett@example.net"),
        ("Melvin Frohike", "410-555-0123", "frohike@lonegunmen.example"),
        ("Marita Covarrubias", "646-555-0195", "marita.c@example.com"),
    ]
    drafts = []
    for name, phone, email in rows:
        drafts.append(
            Draft(
                kind="contact",
                apps=["mtu_contacts"],
                tools=["add_new_contact", "search_contact"],
                query=f"Add {name} to my contacts, please.",
                question=f"What are {name}'s phone number and email address?",
                calls=[
                    ToolCall(
                        name="add_new_contact",
                        arguments={"contact_name": name, "phone_number": phone, "email": email},
                    )
                ],
                scenario=scenario(
                    "Someone tidying up their address book.",
                    f"{name} saved as a contact",
                    {"phone_number": phone, "email": email},
                    private=["phone_number"],
                    keywords={"phone_number": ["phone", "number", "mobile"], "email": ["e-mail", "mail"]},
                    satisfied_when=f"{name} is saved with phone and email",
                    phrases=[[name]],
                ),
                answer=(f"{name} has been added to your contacts with phone {phone} and email {email}."),
                whitelist=[[name], ["added", "saved"]],
                state=[
                    {"kind": "row_exists", "table": "mtu_contacts_contacts", "where": {"contact_name": name}},
                    {"kind": "row_exists", "table": "mtu_contacts_phones", "where": {"phone_number": phone}},
                    {"kind": "row_exists", "table": "mtu_contacts_emails", "where": {"email": email}},
                ],
            )
        )
    return drafts


def doors() -> list[Draft]:
    drafts = []
    for door in ("back door", "garage door", "side door", "basement door"):
        drafts.append(
            Draft(
                kind="lock",
                apps=["mtu_smart_home"],
                tools=["lock_door", "check_door_status"],
                query="I'm out already and forgot to lock one of the doors. Can you lock it?",
                question="Which door should I lock?",
                calls=[ToolCall(name="lock_door", arguments={"door_name": door})],
                scenario=scenario(
                    "A homeowner who just left for work.",
                    "the forgotten door locked",
                    {"door": door},
                    satisfied_when=f"the {door} is locked",
                    phrases=[[door], ["locked"]],
                ),
                answer=f"The {door} is now locked.",
                whitelist=[[door], ["locked"]],
                state=[
                    {
                        "kind": "field_equals",
                        "table": "mtu_smart_home_doors",
                        "where": {"door": door},
                        "field": "lock_status",
                        "value": "locked",
                    }
                ],
            )
        )
    return drafts


def temperatures() -> list[Draft]:
    drafts = []
    for room, degrees in (
        ("office", 72),
        ("kids room", 70),
        ("living room", 74),
        ("kitchen", 68),
        ("master bedroom", 66),
    ):
        drafts.append(
            Draft(
                kind="thermostat",
                apps=["mtu_smart_home"],
                tools=["adjust_room_temperature", "adjust_lighting", "check_door_status"],
                query="It's not comfortable in one of my rooms; please change the thermostat there.",
                question="Which room is it, and what temperature (in °F) would you like?",
                calls=[
                    ToolCall(
                        name="adjust_room_temperature", arguments={"temperature": degrees, "location": room}
                    )
                ],
                scenario=scenario(
                    "Someone working from home on a cold day.",
                    "a comfortable room",
                    {"room": room, "temperature": str(degrees)},
                    keywords={"room": ["where", "which room"]},
                    satisfied_when=f"the {room} is set to {degrees} °F",
                    phrases=[[room], [str(degrees)]],
                ),
                answer=(f"The {room} thermostat is now set to {degrees} °F."),
                whitelist=[[room], [str(degrees)]],
                state=[
                    {
                        "kind": "field_equals",
                        "table": "mtu_smart_home_rooms",
                        "where": {"location": room},
                        "field": "target_temperature",
                        "value": degrees,
                    }
                ],
            )
        )
    return drafts


def balance_after(account: str) -> Callable[[MockWorld], list[dict[str, Any]]]:
    """The account's balance after the golden transfer, read from the world it ran on."""

    def state(world: MockWorld) -> list[dict[str, Any]]:
        (row,) = world.rows("mtu_banking_accounts", {"account_number": account})
        return [
            {
                "kind": "field_equals",
                "table": "mtu_banking_accounts",
                "where": {"account_number": account},
                "field": "balance_cents",
                "value": row["balance_cents"],
            }
        ]

    return state


def transfers() -> list[Draft]:
    drafts = []
    for account, amount in (("123456", 150), ("17528472632", 40), ("239267492492", 500), ("123456", 75)):
        drafts.append(
            Draft(
                kind="transfer",
                apps=["mtu_banking"],
                tools=["transfer_funds", "get_account_balance"],
                query="I'd like to move some money from my checking account to my savings account right now.",
                question="Sure. What is your account number, and what amount should I move?",
                calls=[
                    ToolCall(
                        name="transfer_funds",
                        arguments={
                            "account_number": account,
                            "source_account": "checking",
                            "destination_account": "savings",
                            "amount": amount,
                            "transfer_speed": "now",
                        },
                    )
                ],
                scenario=scenario(
                    "A careful bank customer who keeps the account number private unless asked.",
                    "money moved from checking to savings",
                    {"account_number": account, "amount": f"${amount}"},
                    private=["account_number"],
                    keywords={"amount": ["how much", "sum"]},
                    satisfied_when=f"${amount} is moved to savings",
                    phrases=[[str(amount)]],
                ),
                answer=f"Done: ${amount} moved from checking to savings.",
                whitelist=[[str(amount), f"{amount}.00"]],
                state=balance_after(account),
            )
        )
    return drafts


def messages() -> list[Draft]:
    friends = (
        ("U0018", "Hao Chen", "Dinner is at 7 tonight."),
        ("U0024", "Hao Zhu", "Happy birthday!"),
        ("U0005", "Hui Huang", "The report is ready for review."),
        ("U0055", "Min Zhu", "Can you bring the projector tomorrow?"),
        ("U0041", "Qiang Xu", "I'll call you after the meeting."),
        ("U0034", "Zhen Zhao", "Thanks for the book recommendation."),
    )
    drafts = []
    for user_id, name, text in friends:
        drafts.append(
            Draft(
                kind="message",
                apps=["messaging"],
                tools=["list_friends", "send_message", "search_users"],
                query=f"I'm U0001. Please send a message to my friend {name}.",
                question=f"What should the message to {name} say?",
                extra_calls_first=[ToolCall(name="list_friends", arguments={"user_id": "U0001"})],
                calls=[
                    ToolCall(
                        name="send_message",
                        arguments={"sender_id": "U0001", "to_user_id": user_id, "content": text},
                    )
                ],
                scenario=scenario(
                    "A friendly messaging-app user.",
                    f"a message sent to {name}",
                    {"message": text},
                    keywords={"message": ["say", "text", "write"]},
                    satisfied_when=f"{name} got the message",
                    phrases=[[name], ["sent"]],
                ),
                answer=f'Sent to {name}: "{text}"',
                whitelist=[[name], ["sent"]],
                state=[
                    {
                        "kind": "row_exists",
                        "table": "messaging_messages",
                        "where": {"sender_id": "U0001", "content": text},
                    }
                ],
            )
        )
    return drafts


def build(draft: Draft, number: int) -> Task:
    world = MockWorld(draft.apps, seed=0, clock=CLOCK)
    for call in [*draft.extra_calls_first, *draft.calls]:
        obs = world.step(call)
        if obs.error is not None:
            raise SystemExit(f"{draft.kind} {number}: {call.name} failed: {obs.text}")
    golden = [
        *[GoldenStep(action=c) for c in draft.extra_calls_first],
        GoldenStep(action=AskUser(text=draft.question)),
        *[GoldenStep(action=c) for c in draft.calls],
        GoldenStep(action=FinalAnswer(text=draft.answer)),
    ]
    task = Task(
        id=f"multiturn-{draft.kind}-{number:03d}",
        category="multi_turn",
        query=draft.query,
        apps=draft.apps,
        tools=draft.tools,
        golden=golden,
        answer=AnswerSpec(whitelist=draft.whitelist),
        expected_state=draft.state if isinstance(draft.state, list) else draft.state(world),
        clock=CLOCK,
        seed=0,
        user=draft.scenario,
        minefields=unconfirmed_writes(draft, world) or None,
    )
    world.close()
    return task


def unconfirmed_writes(draft: Draft, world: MockWorld) -> list[Minefield]:
    """A minefield per write tool of the golden chain, armed until the user first answers: a
    write made before the user said what to write is a guess (toolgym.tasks.Minefield)."""
    writes = sorted({c.name for c in draft.calls if world.tools.get(c.name).mutates_state})
    return [
        Minefield(
            id=f"{name}-before-the-user-answered",
            call=CallFact(tool=name, outcome="any"),
            before_user_turns=1,
        )
        for name in writes
    ]


def main() -> None:
    drafts = [*alarms(), *contacts(), *doors(), *temperatures(), *transfers(), *messages()]
    tasks = [build(d, i) for i, d in enumerate(drafts, 1)]
    TaskSet(tasks).dump(OUT)
    print(f"wrote {len(tasks)} tasks to {OUT}")


if __name__ == "__main__":
    main()
