"""Messaging on real SQLite: friendship gates direct messages, membership gates groups, unread
counts follow read marks, recall has a 2-minute window."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from tests.mocks.apps.ctool import expect_error, ok_call
from toolgym.errors import ErrorKind
from toolgym.mocks.apps.ctool import MessagingApp
from toolgym.mocks.apps.ctool.messaging import dm_id
from toolgym.mocks.world import MockWorld


@pytest.fixture
def world() -> Iterator[MockWorld]:
    with MockWorld([MessagingApp]) as w:
        yield w


def _friends(world: MockWorld, user_id: str) -> list[str]:
    return [f["user_id"] for f in ok_call(world, "list_friends", user_id=user_id)["friends"]]


def _stranger(world: MockWorld, user_id: str) -> str:
    """A user who is not a friend and has no pending request with `user_id`."""
    friends = set(_friends(world, user_id))
    pending = {
        r[k]
        for r in world.rows("messaging_friend_requests", {"status": "pending"})
        for k in ("from_user_id", "to_user_id")
        if user_id in (r["from_user_id"], r["to_user_id"])
    }
    return next(
        str(u["user_id"])
        for u in world.rows("messaging_users")
        if u["user_id"] != user_id and u["user_id"] not in friends | pending
    )


def test_only_friends_can_message_and_requests_make_friends(world: MockWorld) -> None:
    me = "U0002"
    other = _stranger(world, me)
    expect_error(world, "send_message", code=403, sender_id=me, to_user_id=other, content="hi")
    req = ok_call(world, "send_friend_request", from_user_id=me, to_user_id=other, message="hello")[
        "request_id"
    ]
    expect_error(world, "send_friend_request", code=409, from_user_id=other, to_user_id=me)  # one is pending
    expect_error(world, "respond_to_friend_request", code=403, request_id=req, user_id=me, action="accept")
    expect_error(world, "respond_to_friend_request", code=400, request_id=req, user_id=other, action="maybe")
    ok_call(world, "respond_to_friend_request", request_id=req, user_id=other, action="accept")
    assert other in _friends(world, me) and me in _friends(world, other)
    expect_error(
        world, "respond_to_friend_request", code=409, request_id=req, user_id=other, action="decline"
    )
    sent = ok_call(world, "send_message", sender_id=me, to_user_id=other, content="hi")
    assert sent["conversation_id"] == dm_id(me, other)
    ok_call(world, "delete_friend", user_id=other, friend_id=me)
    assert other not in _friends(world, me)
    expect_error(world, "send_message", code=403, sender_id=me, to_user_id=other, content="still there?")
    # the history survives the unfriending
    assert ok_call(world, "get_messages", user_id=me, conversation_id=dm_id(me, other))["total"] == 1


def test_declined_request_makes_no_friends(world: MockWorld) -> None:
    me = "U0003"
    other = _stranger(world, me)
    req = ok_call(world, "send_friend_request", from_user_id=me, to_user_id=other)["request_id"]
    ok_call(world, "respond_to_friend_request", request_id=req, user_id=other, action="decline")
    assert other not in _friends(world, me)
    assert world.rows("messaging_friend_requests", {"request_id": req})[0]["status"] == "declined"


def test_groups_membership_rules(world: MockWorld) -> None:
    owner = "U0004"
    friends = _friends(world, owner)
    expect_error(world, "create_group", code=422, owner_id=owner, name="Solo", member_ids=friends[:1])
    stranger = _stranger(world, owner)
    expect_error(
        world, "create_group", code=403, owner_id=owner, name="Mixed", member_ids=[friends[0], stranger]
    )
    gid = ok_call(world, "create_group", owner_id=owner, name="Weekend", member_ids=friends[:2])["group_id"]
    members = ok_call(world, "list_group_members", group_id=gid)["members"]
    assert members[0]["user_id"] == owner and len(members) == 3
    expect_error(world, "join_group", code=403, user_id=stranger, group_id=gid)  # invite-only
    expect_error(world, "send_message", code=403, sender_id=stranger, group_id=gid, content="let me in")
    expect_error(world, "leave_group", code=409, user_id=owner, group_id=gid)
    ok_call(world, "leave_group", user_id=friends[0], group_id=gid)
    expect_error(world, "send_message", code=403, sender_id=friends[0], group_id=gid, content="bye")
    ok_call(world, "send_message", sender_id=friends[1], group_id=gid, content="see you")
    assert gid in [g["group_id"] for g in ok_call(world, "list_my_groups", user_id=friends[1])["groups"]]


def test_join_open_group(world: MockWorld) -> None:
    group = next(g for g in world.rows("messaging_groups") if g["join_mode"] == "open")
    members = {m["user_id"] for m in world.rows("messaging_group_members", {"group_id": group["group_id"]})}
    outsider = next(u["user_id"] for u in world.rows("messaging_users") if u["user_id"] not in members)
    count = ok_call(world, "join_group", user_id=outsider, group_id=group["group_id"])["member_count"]
    assert count == len(members) + 1
    expect_error(world, "join_group", code=409, user_id=outsider, group_id=group["group_id"])


def test_unread_counts_follow_read_marks(world: MockWorld) -> None:
    me = "U0005"
    friend = _friends(world, me)[0]
    conv = dm_id(me, friend)
    ok_call(world, "mark_conversation_read", user_id=me, conversation_id=conv)
    before = ok_call(world, "get_unread_counts", user_id=me)["total_unread"]
    for text in ("one", "two"):
        ok_call(world, "send_message", sender_id=friend, to_user_id=me, content=text)
    counts = ok_call(world, "get_unread_counts", user_id=me)
    assert counts["total_unread"] == before + 2
    assert {"conversation_id": conv, "unread_count": 2} in counts["conversations"]
    listed = {
        c["conversation_id"]: c for c in ok_call(world, "list_conversations", user_id=me)["conversations"]
    }
    assert listed[conv]["unread_count"] == 2 and listed[conv]["last_message"]["content"] == "two"
    assert ok_call(world, "list_conversations", user_id=me)["conversations"][0]["conversation_id"] == conv
    assert ok_call(world, "mark_conversation_read", user_id=me, conversation_id=conv)["unread_count"] == 0
    assert ok_call(world, "mark_conversation_unread", user_id=me, conversation_id=conv)["unread_count"] == 1
    # the sender's own messages never count as unread for the sender
    assert conv not in [
        c["conversation_id"] for c in ok_call(world, "get_unread_counts", user_id=friend)["conversations"]
    ]


def test_recall_window_is_two_minutes(world: MockWorld) -> None:
    me = "U0006"
    friend = _friends(world, me)[0]
    first = ok_call(world, "send_message", sender_id=me, to_user_id=friend, content="oops")["message_id"]
    second = ok_call(world, "send_message", sender_id=me, to_user_id=friend, content="fine")["message_id"]
    expect_error(world, "recall_message", code=403, user_id=friend, message_id=first)
    world.advance_clock(timedelta(seconds=90))
    ok_call(world, "recall_message", user_id=me, message_id=first)
    expect_error(world, "recall_message", code=409, user_id=me, message_id=first)
    shown = ok_call(world, "get_messages", user_id=friend, conversation_id=dm_id(me, friend), page_size=2)[
        "messages"
    ]
    assert [m["content"] for m in shown] == ["fine", "[message recalled]"]
    world.advance_clock(timedelta(seconds=60))  # 150 s after sending
    expect_error(world, "recall_message", code=409, user_id=me, message_id=second)


def test_messages_paginate_newest_first(world: MockWorld) -> None:
    group = max(
        world.rows("messaging_groups"),
        key=lambda g: len(world.rows("messaging_messages", {"conversation_id": g["group_id"]})),
    )
    gid = group["group_id"]
    member = group["owner_id"]
    page1 = ok_call(world, "get_messages", user_id=member, conversation_id=gid, page=1, page_size=10)
    page2 = ok_call(world, "get_messages", user_id=member, conversation_id=gid, page=2, page_size=10)
    ids1, ids2 = [m["message_id"] for m in page1["messages"]], [m["message_id"] for m in page2["messages"]]
    assert len(ids1) == len(ids2) == 10 and page1["has_more"]
    assert ids1 + ids2 == sorted(ids1 + ids2, reverse=True)
    assert page1["total"] == len(world.rows("messaging_messages", {"conversation_id": gid}))
    members = {m["user_id"] for m in world.rows("messaging_group_members", {"group_id": gid})}
    outsider = next(u["user_id"] for u in world.rows("messaging_users") if u["user_id"] not in members)
    expect_error(world, "get_messages", code=403, user_id=outsider, conversation_id=gid)


def test_invalid_input_is_a_typed_error_and_changes_nothing(world: MockWorld) -> None:
    friend = _friends(world, "U0007")[0]
    expect_error(world, "get_user_profile", code=404, user_id="U9999")
    expect_error(world, "send_message", code=400, sender_id="U0007", content="hi")  # no recipient
    expect_error(
        world,
        "send_message",
        code=400,
        sender_id="U0007",
        to_user_id=friend,
        group_id="GRP-0001",
        content="x",
    )
    expect_error(world, "send_message", code=400, sender_id="U0007", to_user_id=friend, content="  ")
    expect_error(world, "send_message", code=400, sender_id="U0007", to_user_id=friend, content="x" * 2001)
    expect_error(world, "get_messages", code=404, user_id="U0007", conversation_id="DM-U0007")
    expect_error(world, "list_friend_requests", code=400, user_id="U0007", direction="sideways")
    expect_error(world, "recall_message", code=404, user_id="U0007", message_id="MSG-999999")
    expect_error(
        world, "create_group", kind=ErrorKind.ARGUMENT_ERROR, owner_id="U0007", name="x", member_ids="U0001"
    )
