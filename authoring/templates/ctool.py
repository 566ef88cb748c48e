"""Templates of the ctool apps (express, messaging, takeout, music, maps, calendar), in English on
the English apps and in Chinese on the `*_zh` apps (`ctool_zh.py`): each template is written once
and phrased per language (`Phrases`), as the zh apps have the same APIs and tables.

A user knows their own customer, user or person id, and their parcel and order numbers; never a
friend's, track's, place's or room booking's id (they name those by what they are).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from toolgym.authoring.generate import Draft, Skip, Template


@dataclass(frozen=True)
class Phrases:
    """The queries (str.format over the template's slots) and the final answer of one language."""

    queries: tuple[str, ...]
    answer: str


Lang = dict[str, Phrases]
CITIES_ZH = {
    "Beijing": "北京", "Shanghai": "上海", "Guangzhou": "广州", "Shenzhen": "深圳", "Hangzhou": "杭州",
    "Chengdu": "成都", "Wuhan": "武汉", "Nanjing": "南京", "Xi'an": "西安", "Chongqing": "重庆",
}  # fmt: skip
STATUS_ZH = {
    "created": "已下单", "picked_up": "已揽收", "in_transit": "运输中", "out_for_delivery": "派送中",
    "delivered": "已签收", "cancelled": "已取消",
}  # fmt: skip


def _say(d: Draft, phrases: Lang, **slots: Any) -> Phrases:
    chosen = phrases[d.lang]
    d.query(chosen.queries, **slots)
    return chosen


def _city(d: Draft, city: str) -> str:
    return CITIES_ZH.get(city, city) if d.lang == "zh" else city


def _now(d: Draft) -> str:
    return d.world.start.isoformat()


# ---- express ------------------------------------------------------------------------------------
TRACK = {
    "en": Phrases(
        (
            "Where is my parcel {t} right now?",
            "What's the status of my shipment {t}?",
            "Can you track parcel {t} for me?",
            "Has my package {t} been delivered yet?",
        ),
        "Parcel {t} is {s} (last update: {e}).",
    ),
    "zh": Phrases(
        (
            "我的快递{t}现在到哪了？",
            "帮我查一下快递{t}的状态。",
            "快递{t}送到了吗？",
            "请帮我跟踪一下包裹{t}。",
        ),
        "快递{t}的状态是{s}（最新进展：{e}）。",
    ),
}


def track(d: Draft) -> None:
    parcel = d.pick("SELECT tracking_number FROM express_shipments ORDER BY tracking_number")[
        "tracking_number"
    ]
    d.knows(parcel)
    p = _say(d, TRACK, t=parcel)
    result = d.call("track_shipment", tracking_number=parcel)
    status = result["shipment_status"]
    said = STATUS_ZH.get(status, status) if d.lang == "zh" else status.replace("_", " ")
    last = result["events"][-1]["description"] if result["events"] else ""
    d.answer(p.answer.format(t=parcel, s=said, e=last), [said, status])


FEE = {
    "en": Phrases(
        (
            "How much does it cost to send a {w} kg parcel from {a} to {b} by {v} service?",
            "Give me a quote: {w} kg, {a} to {b}, {v}.",
            "What would the {v} fee be for {w} kg going from {a} to {b}?",
        ),
        "Sending {w} kg from {a} to {b} by {v} costs {f} yuan.",
    ),
    "zh": Phrases(
        ("从{a}寄{w}公斤的包裹到{b}，用{v}服务要多少钱？", "帮我估一下运费：{w}公斤，{a}寄到{b}，{v}。"),
        "从{a}寄{w}公斤到{b}（{v}）运费是{f}元。",
    ),
}


def fee_quote(d: Draft) -> None:
    cities = [
        r["city"] for r in d.rows("SELECT DISTINCT sender_city AS city FROM express_shipments ORDER BY city")
    ]
    a, b = d.rng.sample(cities, 2)
    weight = d.choice([0.5, 1.0, 1.5, 2.0, 3.0, 5.0, 8.0, 12.0])
    service = d.choice(["standard", "express", "economy"])
    p = _say(d, FEE, w=weight, a=_city(d, a), b=_city(d, b), v=service)
    result = d.call("estimate_shipping_fee", from_city=a, to_city=b, weight_kg=weight, service=service)
    fee = f"{result['fee']:.2f}"
    d.answer(p.answer.format(w=weight, a=_city(d, a), b=_city(d, b), v=service, f=fee), fee)


CANCEL_PARCEL = {
    "en": Phrases(
        (
            "Please cancel my shipment {t}; I don't need to send it any more.",
            "Cancel parcel {t} before the courier picks it up, please.",
            "I'd like to call off shipment {t}.",
        ),
        "Shipment {t} is cancelled.",
    ),
    "zh": Phrases(
        ("请取消快递{t}，我不寄了。", "快递{t}还没揽收，帮我取消掉。", "我想取消寄件{t}。"), "快递{t}已取消。"
    ),
}


def cancel_parcel(d: Draft) -> None:
    parcel = d.pick(
        "SELECT tracking_number FROM express_shipments WHERE pickup_at > ? AND cancelled_at IS NULL"
        " ORDER BY tracking_number",
        _now(d),
    )["tracking_number"]
    d.knows(parcel)
    p = _say(d, CANCEL_PARCEL, t=parcel)
    d.call("cancel_shipment", tracking_number=parcel)
    d.answer(p.answer.format(t=parcel), ["已取消", "取消"] if d.lang == "zh" else ["cancelled", "canceled"])


SEND = {
    "en": Phrases(
        (
            "I'm customer {c}. Send a {w} kg parcel of {g} to {n} from my address book.",
            "Customer {c} here: please book a pickup for {w} kg of {g} going to {n} (saved in my addresses).",
            "Ship {g} ({w} kg) to {n}, whose address I saved; my customer ID is {c}.",
        ),
        "Booked: {g} to {n}; tracking number {t}, fee {f} yuan.",
    ),
    "zh": Phrases(
        (
            "我是客户{c}，帮我给地址簿里的{n}寄{w}公斤的{g}。",
            "客户{c}：请寄一个{w}公斤的包裹给{n}（已保存的地址），里面是{g}。",
        ),
        "已下单：寄给{n}的{g}，运单号{t}，运费{f}元。",
    ),
}
GOODS = {
    "en": ("documents", "clothes", "books", "tea", "a gift box"),
    "zh": ("文件", "衣服", "图书", "茶叶", "礼盒"),
}


def send_to_saved(d: Draft) -> None:
    entry = d.pick(
        "SELECT customer_id, name FROM express_address_book a WHERE (SELECT count(*) FROM express_address_book b"
        " WHERE b.customer_id = a.customer_id AND b.name = a.name) = 1 ORDER BY address_id"
    )
    weight = d.choice([0.5, 1.0, 2.0, 3.5, 6.0])
    goods = d.choice(GOODS[d.lang])
    d.knows(entry["customer_id"])
    p = _say(d, SEND, c=entry["customer_id"], w=weight, g=goods, n=entry["name"])
    book = d.call("list_saved_addresses", customer_id=entry["customer_id"])["addresses"]
    to = next(a for a in book if a["name"] == entry["name"])
    made = d.call(
        "create_shipment",
        customer_id=entry["customer_id"],
        recipient_name=to["name"],
        recipient_phone=to["phone"],
        recipient_city=to["city"],
        recipient_address=to["address"],
        weight_kg=weight,
        item_description=goods,
    )
    fee = f"{made['fee']:.2f}"
    d.answer(
        p.answer.format(g=goods, n=to["name"], t=made["tracking_number"], f=fee), made["tracking_number"]
    )


REDIRECT = {
    "en": Phrases(
        (
            "I need to change where parcel {t} is delivered.",
            "Please redirect my shipment {t} to a new address.",
            "The recipient moved; can you update the delivery address of {t}?",
        ),
        "Parcel {t} will now go to {a}.",
    ),
    "zh": Phrases(("我要修改快递{t}的收件地址。", "请把快递{t}改送到新地址。"), "快递{t}已改送到{a}。"),
}
STREETS = {"en": ("Heping Street", "Xinhua Road", "Wenhua Road"), "zh": ("和平街", "新华路", "文化路")}


def redirect_ask(d: Draft) -> None:
    parcel = d.pick(
        "SELECT tracking_number FROM express_shipments WHERE dispatch_at > ? AND cancelled_at IS NULL"
        " ORDER BY tracking_number",
        _now(d),
    )["tracking_number"]
    number, street = d.rng.randint(2, 300), d.choice(STREETS[d.lang])
    address = f"{number} {street}" if d.lang == "en" else f"{street}{number}号"
    d.knows(parcel)
    p = _say(d, REDIRECT, t=parcel)
    question = "What is the new address?" if d.lang == "en" else "请问新的地址是什么？"
    told = d.ask("new_address", address, question, keywords=["address", "地址"])
    d.call("change_delivery_address", tracking_number=parcel, new_address=told)
    d.answer(p.answer.format(t=parcel, a=told), told)


INSURE = {
    "en": Phrases(
        ("Please add insurance to my parcel {t}.", "Can you buy shipping insurance for {t}?"),
        "Sorry, I can't insure parcel {t}: none of my tools offers insurance.",
    ),
    "zh": Phrases(
        ("请给快递{t}加保价。", "能帮快递{t}买个运输保险吗？"),
        "抱歉，我无法为快递{t}办理保价：没有可用的工具。",
    ),
}


def refuse_insure(d: Draft) -> None:
    parcel = d.pick("SELECT tracking_number FROM express_shipments ORDER BY tracking_number")[
        "tracking_number"
    ]
    d.knows(parcel)
    p = _say(d, INSURE, t=parcel)
    d.refuse((), p.answer.format(t=parcel))


CANCEL_NO_TOOL = {
    "en": Phrases(
        ("Cancel my parcel {t}, please.", "I don't want to send {t} any more; cancel it."),
        "I'm unable to cancel {t}: no tool for cancelling shipments is available to me.",
    ),
    "zh": Phrases(
        ("帮我取消快递{t}。", "快递{t}不寄了，取消吧。"), "我无法取消快递{t}：没有可用的取消工具。"
    ),
}


def refuse_cancel_parcel(d: Draft) -> None:
    parcel = d.pick(
        "SELECT tracking_number FROM express_shipments WHERE cancelled_at IS NULL ORDER BY tracking_number"
    )["tracking_number"]
    d.knows(parcel)
    p = _say(d, CANCEL_NO_TOOL, t=parcel)
    d.refuse(["cancel_shipment"], p.answer.format(t=parcel))


# ---- messaging ------------------------------------------------------------------------------------
UNREAD = {
    "en": Phrases(
        (
            "How many unread messages do I have? My user ID is {u}.",
            "User {u}: how many messages haven't I read yet?",
        ),
        "You have {n} unread messages.",
    ),
    "zh": Phrases(
        ("我有多少条未读消息？我的用户ID是{u}。", "用户{u}：还有几条消息没看？"), "你有{n}条未读消息。"
    ),
}


def unread(d: Draft) -> None:
    user = d.pick("SELECT user_id FROM messaging_users ORDER BY user_id")["user_id"]
    d.knows(user)
    p = _say(d, UNREAD, u=user)
    total = d.call("get_unread_counts", user_id=user)["total_unread"]
    d.answer(p.answer.format(n=total), str(total))


MESSAGE = {
    "en": Phrases(
        (
            'I\'m user {u}. Send my friend {f} this message: "{m}"',
            'User {u} here: tell {f} "{m}"',
            'Message {f} for me: "{m}" (my user ID is {u}).',
        ),
        'Sent to {f}: "{m}"',
    ),
    "zh": Phrases(
        ("我是用户{u}，给我的好友{f}发消息：“{m}”", "用户{u}：帮我告诉{f}“{m}”"), "已发给{f}：“{m}”"
    ),
}
NOTES = {
    "en": ("Running ten minutes late, see you soon!", "Dinner at seven tonight?", "Thanks for the book!",
           "Call me when you land.", "Happy birthday!"),
    "zh": ("我晚到十分钟，马上到！", "今晚七点一起吃饭？", "谢谢你的书！", "落地了给我打电话。", "生日快乐！"),
}  # fmt: skip


def _friend(d: Draft) -> tuple[str, str]:
    row = d.pick(
        "SELECT f.user_id, u.display_name FROM messaging_friendships f JOIN messaging_users u"
        " ON u.user_id = f.friend_id GROUP BY f.user_id, u.display_name HAVING count(*) = 1"
        " ORDER BY f.user_id, u.display_name"
    )
    return row["user_id"], row["display_name"]


def _message_friend(d: Draft, user: str, name: str, text: str) -> dict[str, Any]:
    friends = d.call("list_friends", user_id=user)["friends"]
    friend = next(f for f in friends if f["display_name"] == name)
    return d.call("send_message", sender_id=user, to_user_id=friend["user_id"], content=text)


def message_friend(d: Draft) -> None:
    user, name = _friend(d)
    text = d.choice(NOTES[d.lang])
    d.knows(user)
    p = _say(d, MESSAGE, u=user, f=name, m=text)
    _message_friend(d, user, name, text)
    d.answer(p.answer.format(f=name, m=text), name)


GROUP = {
    "en": Phrases(
        (
            'How many members does my group "{g}" have? I\'m user {u}.',
            'User {u}: how big is the "{g}" group chat?',
        ),
        '"{g}" has {n} members.',
    ),
    "zh": Phrases(
        ("我是用户{u}，我的群“{g}”有多少人？", "用户{u}：“{g}”这个群有几个成员？"), "“{g}”群有{n}名成员。"
    ),
}


def group_size(d: Draft) -> None:
    row = d.pick(
        "SELECT m.user_id, g.name FROM messaging_group_members m JOIN messaging_groups g USING (group_id)"
        " ORDER BY m.user_id, m.group_id"
    )
    d.knows(row["user_id"])
    p = _say(d, GROUP, u=row["user_id"], g=row["name"])
    groups = d.call("list_my_groups", user_id=row["user_id"])["groups"]
    group = next(g for g in groups if g["name"] == row["name"])
    members = d.call("list_group_members", group_id=group["group_id"])
    count = len(members["members"])
    d.answer(p.answer.format(g=row["name"], n=count), str(count))


# ---- takeout --------------------------------------------------------------------------------------
TAKEOUT_TOTAL = {
    "en": Phrases(
        ("How much did my takeout order {o} cost in total?", "What was the total of food order {o}?"),
        "Order {o} from {r} came to {t} yuan.",
    ),
    "zh": Phrases(("我的外卖订单{o}一共多少钱？", "外卖{o}总共花了多少？"), "订单{o}（{r}）共{t}元。"),
}


def takeout_total(d: Draft) -> None:
    order = d.pick("SELECT order_id FROM takeout_orders ORDER BY order_id")["order_id"]
    d.knows(order)
    p = _say(d, TAKEOUT_TOTAL, o=order)
    got = d.call("get_takeout_order", order_id=order)["order"]
    total = f"{got['total']:.2f}"
    d.answer(p.answer.format(o=order, r=got["restaurant_name"], t=total), total)


TAKEOUT_CANCEL = {
    "en": Phrases(
        ("Please cancel my takeout order {o}.", "Cancel food order {o}; I don't want it any more."),
        "Order {o} is cancelled.",
    ),
    "zh": Phrases(("请取消我的外卖订单{o}。", "外卖{o}不要了，帮我取消。"), "订单{o}已取消。"),
}


def takeout_cancel(d: Draft) -> None:
    order = d.pick(
        "SELECT order_id FROM takeout_orders WHERE cancelled_at IS NULL AND (dispatched_at IS NULL OR dispatched_at > ?)"
        " ORDER BY order_id",
        _now(d),
    )["order_id"]
    d.knows(order)
    p = _say(d, TAKEOUT_CANCEL, o=order)
    d.call("cancel_takeout_order", order_id=order)
    d.answer(p.answer.format(o=order), ["已取消", "取消"] if d.lang == "zh" else ["cancelled", "canceled"])


REORDER = {
    "en": Phrases(
        ("Order the same thing as my takeout order {o} again, please.", "Repeat my food order {o}."),
        "Reordered: new order {n}, {t} yuan.",
    ),
    "zh": Phrases(("把外卖订单{o}再点一份。", "按订单{o}再下一单。"), "已再来一单：新订单{n}，共{t}元。"),
}


def reorder(d: Draft) -> None:
    order = d.pick("SELECT order_id FROM takeout_orders WHERE delivered_at < ? ORDER BY order_id", _now(d))[
        "order_id"
    ]
    d.knows(order)
    p = _say(d, REORDER, o=order)
    made = d.call("reorder_takeout_order", order_id=order)["order"]
    total = f"{made['total']:.2f}"
    d.answer(p.answer.format(n=made["order_id"], t=total), total)


# ---- music ----------------------------------------------------------------------------------------
TOP_TRACK = {
    "en": Phrases(
        (
            "What's the most played song by {a}?",
            "Which track of {a} gets played the most?",
            "Name {a}'s biggest hit.",
        ),
        '{a}\'s most played track is "{t}".',
    ),
    "zh": Phrases(("{a}播放最多的歌是哪首？", "{a}最热门的歌曲叫什么？"), "{a}播放最多的歌是《{t}》。"),
}


def top_track(d: Draft) -> None:
    artist = d.pick(
        "SELECT name FROM music_artists GROUP BY name HAVING count(*) = 1 ORDER BY min(artist_id)"
    )["name"]
    p = _say(d, TOP_TRACK, a=artist)
    found = d.call("search_artists", query=artist)["artists"]
    match = next((a for a in found if a["name"] == artist), None)
    if match is None:
        raise Skip("artist not found by name")
    tracks = d.call("get_artist", artist_id=match["artist_id"])["top_tracks"]
    if not tracks:
        raise Skip("no tracks")
    if len(tracks) > 1 and tracks[0].get("play_count") == tracks[1].get("play_count"):
        raise Skip("a tie")
    d.answer(p.answer.format(a=artist, t=tracks[0]["title"]), tracks[0]["title"])


LIKE = {
    "en": Phrases(
        (
            'I\'m user {u}. Add "{t}" by {a} to my liked songs.',
            'User {u}: like the song "{t}" by {a} for me.',
        ),
        '"{t}" is in your liked songs now.',
    ),
    "zh": Phrases(
        ("我是用户{u}，把{a}的《{t}》加到我喜欢的歌里。", "用户{u}：帮我收藏{a}的歌《{t}》。"),
        "《{t}》已加入你喜欢的歌曲。",
    ),
}


def like_track(d: Draft) -> None:
    row = d.pick(
        "SELECT t.title, a.name, t.artist_id FROM music_tracks t JOIN music_artists a USING (artist_id)"
        " GROUP BY t.title, t.artist_id HAVING count(*) = 1 ORDER BY min(t.track_id)"
    )
    user = d.pick("SELECT user_id FROM music_users ORDER BY user_id")["user_id"]
    d.knows(user)
    p = _say(d, LIKE, u=user, t=row["title"], a=row["name"])
    found = d.call("search_tracks", query=row["title"], artist_id=row["artist_id"], page_size=20)["tracks"]
    track = next((t for t in found if t["title"] == row["title"]), None)
    if track is None:
        raise Skip("track not found")
    d.call("like_track", user_id=user, track_id=track["track_id"])
    d.answer(p.answer.format(t=row["title"]), row["title"])


# ---- maps -----------------------------------------------------------------------------------------
PHONE = {
    "en": Phrases(
        ("What's the phone number of {p} in {c}?", "I need to call {p} ({c}); what's their number?"),
        "{p}: {n}.",
    ),
    "zh": Phrases(("{c}的{p}电话是多少？", "帮我查一下{c}{p}的联系电话。"), "{p}的电话是{n}。"),
}


def place_phone(d: Draft) -> None:
    place = d.pick(
        "SELECT name, city FROM maps_places GROUP BY name, city"
        " HAVING count(*) = 1 AND max(phone) IS NOT NULL ORDER BY min(place_id)"
    )
    p = _say(d, PHONE, p=place["name"], c=_city(d, place["city"]))
    found = d.call("search_places", query=place["name"], city=place["city"])["places"]
    match = next((x for x in found if x["name"] == place["name"]), None)
    if match is None:
        raise Skip("place not found by name")
    details = d.call("get_place_details", place_id=match["place_id"])["place"]
    d.answer(p.answer.format(p=place["name"], n=details["phone"]), details["phone"])


# ---- calendar -------------------------------------------------------------------------------------
BOOK = {
    "en": Phrases(
        (
            "I'm {u}. Book me the smallest free room for {n} people on {day} from {s} to {e}.",
            "Person {u} here: find a room for {n} on {day}, {s}-{e}, and book it.",
        ),
        "Booked {r} on {day} from {s} to {e}.",
    ),
    "zh": Phrases(
        (
            "我是{u}，帮我订{day} {s}到{e}能坐{n}人的最小的空会议室。",
            "{u}：{day} {s}-{e}要开会，{n}个人，帮我找个会议室订上。",
        ),
        "已预订{r}，时间{day} {s}到{e}。",
    ),
}


def book_room(d: Draft) -> None:
    person = d.pick("SELECT person_id FROM calendar_people ORDER BY person_id")["person_id"]
    day = f"2024-01-{d.rng.randint(2, 26):02d}"
    hour = d.rng.randint(8, 17)
    start, end = f"{hour:02d}:00", f"{hour + 1:02d}:00"
    size = d.choice([2, 4, 6, 8, 10])
    d.knows(person)
    p = _say(d, BOOK, u=person, n=size, day=day, s=start, e=end)
    window = {"start_time": f"{day}T{start}:00Z", "end_time": f"{day}T{end}:00Z"}
    rooms = d.call("search_available_rooms", min_capacity=size, **window)["rooms"]
    if not rooms:
        raise Skip("no room free")
    room = rooms[0]
    d.call("book_room", room_id=room["room_id"], person_id=person, attendee_count=size, **window)
    d.answer(p.answer.format(r=room["name"], day=day, s=start, e=end), room["name"])


BUILDERS: list[tuple[str, str, Callable[[Draft], None]]] = [
    ("express.track", "express", track),
    ("express.fee_quote", "express", fee_quote),
    ("express.cancel", "express", cancel_parcel),
    ("express.send_to_saved", "express", send_to_saved),
    ("express.redirect_ask_address", "express", redirect_ask),
    ("express.refuse_insure", "express", refuse_insure),
    ("express.refuse_cancel", "express", refuse_cancel_parcel),
    ("messaging.unread", "messaging", unread),
    ("messaging.message_friend", "messaging", message_friend),
    ("messaging.group_size", "messaging", group_size),
    ("takeout.order_total", "takeout", takeout_total),
    ("takeout.cancel", "takeout", takeout_cancel),
    ("takeout.reorder", "takeout", reorder),
    ("music.top_track", "music", top_track),
    ("music.like_track", "music", like_track),
    ("maps.place_phone", "maps", place_phone),
    ("calendar.book_room", "calendar", book_room),
]


def templates(lang: str) -> list[Template]:
    """The ctool templates on the English apps (`lang="en"`) or the Chinese ones (`"zh"`)."""
    group, suffix = ("ctool", "") if lang == "en" else ("ctool_zh", "_zh")
    return [Template(f"{group}.{name}", (app + suffix,), fn, lang=lang) for name, app, fn in BUILDERS]


TEMPLATES = templates("en")
