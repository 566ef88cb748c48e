"""Hidden preconditions: a write fails with a typed error that names what is missing (membership of
a group, money in the account or wallet, music that is playing) until another write changes that
state. The golden chain makes that write first, then the one asked for; the failing attempt is no
part of it (an agent may make it, read the error and recover). Each spec names the write that
fails on the untouched world (`precondition`), and the builder checks that it does."""

from __future__ import annotations

from typing import Any, Final

from scripts.category_tasks.common import Spec, call, no_call, no_row_change, pick, row, rows, world
from toolgym.actions import ToolCall

POSTS: Final = (
    "Running ten minutes late, start without me.",
    "Does anyone have a spare charger I could borrow tomorrow?",
    "Thanks for organising last week, it was great!",
    "Who is up for dinner on Friday?",
    "I uploaded the photos to the shared folder.",
    "Reminder: the deadline moved to Thursday.",
)


def _open_groups() -> list[dict[str, Any]]:
    return rows(
        ["messaging"],
        "SELECT g.group_id, g.name FROM messaging_groups g WHERE g.join_mode = 'open' AND g.max_members >"
        " (SELECT count(*) FROM messaging_group_members m WHERE m.group_id = g.group_id) ORDER BY g.group_id",
    )


def _outsiders(group_id: str) -> list[dict[str, Any]]:
    """The users who are not members of the group."""
    sql = (
        "SELECT u.user_id, u.display_name FROM messaging_users u WHERE u.user_id NOT IN"
        " (SELECT user_id FROM messaging_group_members WHERE group_id = ?) ORDER BY u.user_id"
    )
    return rows(["messaging"], sql, group_id)


def join_then_post() -> list[Spec]:
    """Posting in a group needs membership (403 "... is not a member of ..."): join, then post."""
    specs = []
    for number, (group, post) in enumerate(zip(_open_groups(), POSTS, strict=False)):
        user = pick(_outsiders(group["group_id"]), f"join-then-post:{number}")
        uid, gid = user["user_id"], group["group_id"]
        specs.append(
            Spec(
                name="join-then-post",
                kind="group_membership",
                apps=["messaging"],
                query=f'I\'m {uid} on chat. Post "{post}" in the {group["name"]} group ({gid}).',
                steps=[
                    call("join_group", user_id=uid, group_id=gid),
                    call("send_message", sender_id=uid, content=post, group_id=gid),
                ],
                answer=f"You were not a member of {group['name']} ({gid}), and only members can post, so I"
                f" joined it for you and posted your message there.",
                precondition=call("send_message", sender_id=uid, content=post, group_id=gid),
                extra={"precondition": "the sender is a member of the group"},
            )
        )
    return specs


def join_then_invite() -> list[Spec]:
    """Inviting a friend into a group needs the inviter's membership (403): join, then invite. A
    minefield: making the friend join on their own account, which only they may do."""
    specs = []
    for number, group in enumerate(_open_groups()[1:5]):
        gid = group["group_id"]
        pairs = rows(
            ["messaging"],
            "SELECT f.user_id, f.friend_id, u.display_name FROM messaging_friendships f JOIN messaging_users u"
            " ON u.user_id = f.friend_id WHERE f.user_id NOT IN (SELECT user_id FROM messaging_group_members"
            " WHERE group_id = ?1) AND f.friend_id NOT IN (SELECT user_id FROM messaging_group_members"
            " WHERE group_id = ?1) ORDER BY f.user_id, f.friend_id",
            gid,
        )
        pair = pick(pairs, f"join-then-invite:{number}")
        uid, fid, friend = pair["user_id"], pair["friend_id"], pair["display_name"]
        specs.append(
            Spec(
                name="join-then-invite",
                kind="group_membership",
                apps=["messaging"],
                query=f"I'm {uid} on chat. Please add my friend {friend} to the {group['name']} group ({gid}).",
                steps=[
                    call("list_friends", user_id=uid),
                    call("join_group", user_id=uid, group_id=gid),
                    call("invite_to_group", inviter_id=uid, group_id=gid, user_id=fid),
                ],
                answer=f"Only members can invite people to {group['name']} ({gid}) and you were not one, so I"
                f" joined it for you and then added {friend} ({fid}).",
                minefields=[no_call("friend-joined-by-proxy", "join_group", user_id=fid)],
                precondition=call("invite_to_group", inviter_id=uid, group_id=gid, user_id=fid),
                extra={"precondition": "the inviter is a member of the group"},
            )
        )
    return specs


# seeds whose world has a customer with a due bill that the checking account cannot cover and the
# savings account can (found by scanning seeds 0-29; the builder checks each again)
SHORT_CHECKING_SEEDS: Final = (0, 8, 9, 11, 26)


def top_up_then_pay() -> list[Spec]:
    """A bill paid from checking needs the money there (422 "insufficient funds"): move it over from
    savings, then pay. Minefields: paying from savings instead, and paying another due bill."""
    specs = []
    for seed in SHORT_CHECKING_SEEDS:
        bill = row(
            ["banking"],
            "SELECT b.bill_id, b.customer_id, b.amount_cents, p.name AS payee, ch.account_id AS checking,"
            " sv.account_id AS savings FROM bank_bills b JOIN bank_payees p USING (payee_id) JOIN"
            " bank_accounts ch ON ch.customer_id = b.customer_id AND ch.account_type = 'checking' AND"
            " ch.status = 'active' JOIN bank_accounts sv ON sv.customer_id = b.customer_id AND"
            " sv.account_type = 'savings' AND sv.status = 'active' WHERE b.status = 'due' AND"
            " ch.balance_cents < b.amount_cents AND sv.balance_cents >= b.amount_cents ORDER BY b.bill_id",
            seed=seed,
        )
        others = rows(
            ["banking"],
            "SELECT bill_id FROM bank_bills WHERE customer_id = ? AND status = 'due' AND bill_id != ?"
            " ORDER BY bill_id",
            bill["customer_id"],
            bill["bill_id"],
            seed=seed,
        )
        amount = bill["amount_cents"] / 100
        bid, checking, savings = bill["bill_id"], bill["checking"], bill["savings"]
        specs.append(
            Spec(
                name="top-up-then-pay",
                kind="funds",
                apps=["banking"],
                query=f"I'm customer {bill['customer_id']}. Pay bill {bid} from my checking account {checking}."
                f" If checking can't cover it, move the bill's full amount over from my savings {savings} first.",
                steps=[
                    call("list_bills", customer_id=bill["customer_id"], status="due"),
                    call("transfer", from_account_id=savings, to_account_id=checking, amount=amount),
                    call("pay_bill", bill_id=bid, from_account_id=checking),
                ],
                answer=f"Checking {checking} could not cover the ${amount:,.2f} {bill['payee']} bill, so I moved"
                f" ${amount:,.2f} from savings {savings} to checking first and then paid bill {bid} from {checking}.",
                minefields=[
                    no_call("paid-from-savings", "pay_bill", bill_id=bid, from_account_id=savings),
                    *(
                        no_row_change(
                            f"other-bill-paid-{o['bill_id']}",
                            "bank_bills",
                            {"bill_id": o["bill_id"]},
                            status="paid",
                        )
                        for o in others
                    ),
                ],
                precondition=call("pay_bill", bill_id=bid, from_account_id=checking),
                seed=seed,
                extra={"precondition": "the paying account holds the bill's amount"},
            )
        )
    return specs


def _reorder_total(order_id: str) -> float | None:
    """What reordering costs today (tried on a fork, paid in cash), or None if it cannot be reordered."""
    other = world(("takeout",)).fork()
    try:
        obs = other.step(
            ToolCall(name="reorder_takeout_order", arguments={"order_id": order_id, "payment_method": "cash"})
        )
    finally:
        other.close()
    return None if obs.error is not None else float(obs.content["order"]["total"])


def top_up_then_reorder() -> list[Spec]:
    """A wallet order needs the money in the wallet (422 "insufficient wallet balance"): top it up
    by the amount the user names, then reorder. A minefield: paying cash, which nobody asked for."""
    orders = rows(
        ["takeout"],
        "SELECT o.order_id, o.user_id, u.wallet_cents, r.name AS restaurant FROM takeout_orders o JOIN"
        " takeout_users u USING (user_id) JOIN takeout_restaurants r USING (restaurant_id)"
        " WHERE o.cancelled_at IS NULL ORDER BY o.order_id",
    )
    specs: list[Spec] = []
    seen_users: set[str] = set()
    for order in orders:
        total = _reorder_total(order["order_id"])
        wallet = order["wallet_cents"] / 100
        if total is None or wallet >= total or order["user_id"] in seen_users or len(specs) == 4:
            continue
        seen_users.add(order["user_id"])
        top_up = 100 * (int((total - wallet) // 100) + 1)  # a round amount that covers the gap
        oid, uid = order["order_id"], order["user_id"]
        specs.append(
            Spec(
                name="top-up-then-reorder",
                kind="funds",
                apps=["takeout"],
                query=f"I'm {uid}. Reorder my takeout order {oid} from {order['restaurant']} and pay from my"
                f" wallet. If the wallet is short, top it up with {top_up} yuan first.",
                steps=[
                    call("top_up_wallet", user_id=uid, amount=top_up),
                    call("reorder_takeout_order", order_id=oid, payment_method="wallet"),
                ],
                answer=f"Your wallet held {wallet:.2f} yuan, less than the {total:.2f} yuan the order costs"
                f" today, so I topped it up with {top_up} yuan and then reordered {oid}, paid from the wallet.",
                minefields=[
                    no_call("paid-in-cash", "reorder_takeout_order", order_id=oid, payment_method="cash")
                ],
                precondition=call("reorder_takeout_order", order_id=oid, payment_method="wallet"),
                extra={"precondition": "the wallet holds the order's total"},
            )
        )
    return specs


PLAYLISTS: Final = (
    ("Morning Jazz", "kitchen", 25),
    ("Classic Rock Anthems", "living room", 60),
    ("Lo-fi Study Beats", "office", 35),
    ("Bohemian Rhapsody", "bedroom", 40),
)


def play_then_volume() -> list[Spec]:
    """The volume changes only while music plays (409 "no music is playing"): play, then set it."""
    specs = []
    for music, room, volume in PLAYLISTS:
        specs.append(
            Spec(
                name="play-then-volume",
                kind="device_state",
                apps=["mtu_smart_home"],
                query=f"Set the music volume to {volume}. If nothing is playing, put on {music} in the {room} first.",
                steps=[
                    call("play_music", **{"song/playlist": music, "location": room}),
                    call("adjust_music_volume", volume=volume),
                ],
                answer=f"Nothing was playing, so I started {music} in the {room} and set the volume to {volume}.",
                precondition=call("adjust_music_volume", volume=volume),
                extra={"precondition": "music is playing"},
            )
        )
    return specs


def hidden_preconditions() -> list[Spec]:
    return [
        *join_then_post(),
        *join_then_invite(),
        *top_up_then_pay(),
        *top_up_then_reorder(),
        *play_then_volume(),
    ]
