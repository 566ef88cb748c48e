"""Regenerate fixtures/mock_tasks/ctool_zh.jsonl: Chinese CToolEval-style tasks on the zh locale of
the six CToolEval-style apps (mocks/apps/ctool/zh.py), in CToolEval's four query types:

- fixed: a question with one right answer, checked by keywords (Chinese-aware matching);
- open_ended: a summary or description, with a reference answer (judged against it, or scored by
  similarity without a judge);
- real_time: a question about a value that changes with time (a parcel's status, unread
  messages), checked against the values the episode's own calls returned;
- operation: a request that changes state (cancel a parcel, send a message), checked on the state.

Every task's world holds a group of apps (express and messaging; calendar, maps, music and
takeout), so a retriever picks from all their tools (`tools` lists the gold tools and a few
distractors: the gold-tools setting). The golden calls are run here on a
fresh world and the answers written from their results: a failing call stops the script.
Run: python scripts/make_ctool_zh_tasks.py
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from toolgym.actions import FinalAnswer, ToolCall
from toolgym.mocks.clock import format_time
from toolgym.mocks.world import MockWorld
from toolgym.tasks import AnswerSpec, GoldenStep, Task, TaskSet

OUT = Path(__file__).resolve().parents[1] / "fixtures" / "mock_tasks" / "ctool_zh.jsonl"
CLOCK = datetime(2024, 1, 1, tzinfo=UTC)
APPS = ["express_zh", "messaging_zh"]
# the other four apps share a world (tasks stay small: five per template and app)
APPS_2 = ["calendar_zh", "maps_zh", "music_zh", "takeout_zh"]
PER_TEMPLATE = 10
PER_TEMPLATE_2 = 5
ORDER_STATUS_ZH = {
    "placed": "已下单",
    "preparing": "备餐中",
    "delivering": "配送中",
    "delivered": "已送达",
    "cancelled": "已取消",
}

STATUS_ZH = {
    "created": "待揽收",
    "picked_up": "已揽收",
    "in_transit": "运输中",
    "arrived_at_destination": "已到达目的地",
    "out_for_delivery": "派送中",
    "delivered": "已签收",
    "cancelled": "已取消",
}
CITY_ZH = {
    "Beijing": "北京",
    "Shanghai": "上海",
    "Guangzhou": "广州",
    "Shenzhen": "深圳",
    "Hangzhou": "杭州",
    "Chengdu": "成都",
    "Wuhan": "武汉",
    "Nanjing": "南京",
    "Xi'an": "西安",
    "Chongqing": "重庆",
}
MESSAGES = (
    "明天下午三点开会，别迟到。",
    "周末一起去爬山吧？",
    "我到楼下了，你下来吧。",
    "报告我已经发给你了，请查收。",
    "生日快乐，祝你万事如意！",
    "晚上七点在老地方吃饭。",
    "谢谢你昨天的帮忙！",
    "你的快递我帮你拿了。",
    "下周的会议改到周三了。",
    "记得带上身份证。",
)


@dataclass
class Draft:
    kind: str  # fixed | open_ended | real_time | operation
    query: str
    calls: list[ToolCall]
    tools: list[str]
    answer: str
    whitelist: list[list[str]] = field(default_factory=list)
    references: list[str] = field(default_factory=list)
    answer_fields: list[str] = field(default_factory=list)
    state: list[dict[str, Any]] = field(default_factory=list)
    apps: list[str] = field(default_factory=lambda: APPS)


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(name=name, arguments=arguments)


def yuan(value: float) -> str:
    return f"{value:.2f}"


def shipments(world: MockWorld) -> list[dict[str, Any]]:
    """Every 37th shipment that is not cancelled (a spread over the seeded ones)."""
    rows = world.rows("express_shipments", {})
    return [r for r in rows[5::37] if r["cancelled_at"] is None]


def express(world: MockWorld) -> list[Draft]:
    drafts: list[Draft] = []
    for s in shipments(world)[:PER_TEMPLATE]:
        view = world.call("get_shipment", tracking_number=s["tracking_number"])["shipment"]
        track = world.call("track_shipment", tracking_number=view["tracking_number"])
        drafts += shipment_drafts(view, track["shipment_status"])
    return drafts + cancel_shipment_drafts(world)


def shipment_drafts(view: dict[str, Any], status: str) -> list[Draft]:
    """A shipment's two fixed questions, its status (real time) and its summary (open ended)."""
    tn, rec = view["tracking_number"], view["recipient"]
    summary = (
        f"快递{tn}由{view['sender']['name']}从{CITY_ZH[view['sender']['city']]}寄往"
        f"{CITY_ZH[rec['city']]}的{rec['name']}（{rec['address']}），物品是{view['item_description']}，"
        f"重{view['weight_kg']}公斤，运费{yuan(view['fee'])}元，当前状态为{STATUS_ZH[view['shipment_status']]}。"
    )
    return [
        Draft(
            "fixed",
            f"快递{tn}的收件人是谁？寄的是什么东西？",
            [call("get_shipment", tracking_number=tn)],
            ["get_shipment", "track_shipment", "list_shipments"],
            f"快递{tn}的收件人是{rec['name']}，寄的是{view['item_description']}。",
            whitelist=[[rec["name"]], [view["item_description"]]],
        ),
        Draft(
            "fixed",
            f"帮我查一下快递{tn}花了多少运费，一共多少公斤？",
            [call("get_shipment", tracking_number=tn)],
            ["get_shipment", "estimate_shipping_fee", "track_shipment"],
            f"快递{tn}的运费是{yuan(view['fee'])}元，重{view['weight_kg']}公斤。",
            whitelist=[[yuan(view["fee"])], [str(view["weight_kg"])]],
        ),
        Draft(
            "real_time",
            f"我的快递{tn}现在到哪一步了？",
            [call("track_shipment", tracking_number=tn)],
            ["track_shipment", "get_shipment", "list_shipments"],
            f"快递{tn}当前状态：{STATUS_ZH[status]}（{status}）。",
            # the whitelist serves the reward (the clock is fixed); the suite checks the
            # answer against the status the episode's own call returned
            whitelist=[[STATUS_ZH[status], status]],
            answer_fields=["shipment_status"],
        ),
        Draft(
            "open_ended",
            f"请用一段话介绍一下快递{tn}的情况。",
            [call("get_shipment", tracking_number=tn)],
            ["get_shipment", "track_shipment", "get_customer_profile"],
            summary,
            references=[summary],
        ),
    ]


def cancel_shipment_drafts(world: MockWorld) -> list[Draft]:
    """Cancelling shipments not picked up yet (operation)."""
    cancellable = [
        r["tracking_number"]
        for r in world.rows("express_shipments", {})
        if r["cancelled_at"] is None
        and world.call("track_shipment", tracking_number=r["tracking_number"])["shipment_status"] == "created"
    ][:PER_TEMPLATE]
    drafts: list[Draft] = []
    for tn in cancellable:
        fee = world.rows("express_shipments", {"tracking_number": tn})[0]["fee_cents"] / 100
        drafts.append(
            Draft(
                "operation",
                f"请帮我取消快递{tn}，东西不寄了。",
                [call("cancel_shipment", tracking_number=tn, reason="东西不寄了")],
                ["cancel_shipment", "change_delivery_address", "track_shipment"],
                f"快递{tn}已取消，{yuan(fee)}元运费不会收取。",
                state=[
                    {
                        "kind": "field_equals",
                        "table": "express_shipments",
                        "where": {"tracking_number": tn},
                        "field": "cancelled_at",
                        "value": format_time(CLOCK),
                    }
                ],
            )
        )
    return drafts


def messaging(world: MockWorld) -> list[Draft]:
    drafts: list[Draft] = []
    users = [u["user_id"] for u in world.rows("messaging_users", {})][2::7][:PER_TEMPLATE]
    for n, uid in enumerate(users):
        profile = world.call("get_user_profile", user_id=uid)["user"]
        drafts.append(
            Draft(
                "fixed",
                f"用户{uid}的昵称叫什么？他有几个好友？",
                [call("get_user_profile", user_id=uid)],
                ["get_user_profile", "search_users", "list_friends"],
                f"用户{uid}的昵称是{profile['display_name']}，有{profile['friend_count']}个好友。",
                whitelist=[[profile["display_name"]], [str(profile["friend_count"])]],
            )
        )
        unread = world.call("get_unread_counts", user_id=uid)
        drafts.append(
            Draft(
                "real_time",
                f"我是用户{uid}，我现在一共有多少条未读消息？",
                [call("get_unread_counts", user_id=uid)],
                ["get_unread_counts", "list_conversations", "get_messages"],
                f"你现在一共有{unread['total_unread']}条未读消息。",
                whitelist=[[str(unread["total_unread"])]],
                answer_fields=["total_unread"],
            )
        )
        friends = world.call("list_friends", user_id=uid)["friends"]
        names = "、".join(f["display_name"] for f in friends)
        described = f"用户{profile['display_name']}（{uid}）共有{len(friends)}位好友：{names}。"
        drafts.append(
            Draft(
                "open_ended",
                f"介绍一下用户{uid}的好友情况。",
                [call("list_friends", user_id=uid)],
                ["list_friends", "get_user_profile", "list_my_groups"],
                described,
                references=[described],
            )
        )
        friend = friends[0]
        content = MESSAGES[n % len(MESSAGES)]
        drafts.append(
            Draft(
                "operation",
                f"我是用户{uid}，请帮我给好友{friend['display_name']}发一条消息：“{content}”",
                [
                    call("list_friends", user_id=uid),
                    call("send_message", sender_id=uid, to_user_id=friend["user_id"], content=content),
                ],
                ["list_friends", "send_message", "search_users", "get_messages"],
                f"已经把消息发给{friend['display_name']}了。",
                state=[
                    {
                        "kind": "row_exists",
                        "table": "messaging_messages",
                        "where": {"sender_id": uid, "content": content},
                    }
                ],
            )
        )
    return drafts


def amount(value: float) -> str:
    """12.0 -> '12', 26.5 -> '26.5' (as an answer states an amount)."""
    return f"{value:g}"


def calendar(world: MockWorld) -> list[Draft]:
    drafts: list[Draft] = []
    events = [e for e in world.rows("calendar_events", {}) if e["location"]][3::41][:PER_TEMPLATE_2]
    for e in events:
        view = world.call("get_event", event_id=e["event_id"])["event"]
        eid = view["event_id"]
        drafts.append(
            Draft(
                "fixed",
                f"日程{eid}的主题是什么？在哪里开？",
                [call("get_event", event_id=eid)],
                ["get_event", "list_events", "get_room"],
                f"日程{eid}的主题是{view['title']}，地点在{view['location']}。",
                whitelist=[[view["title"]], [view["location"]]],
                apps=APPS_2,
            )
        )
        names = "、".join(a["name"] for a in view["attendees"])
        summary = (
            f"日程{eid}“{view['title']}”从{view['start_time']}开到{view['end_time']}，地点{view['location']}，"
            f"共{len(view['attendees'])}人参加：{names}。"
        )
        drafts.append(
            Draft(
                "open_ended",
                f"请介绍一下日程{eid}的安排。",
                [call("get_event", event_id=eid)],
                ["get_event", "list_events", "search_people"],
                summary,
                references=[summary],
                apps=APPS_2,
            )
        )
    for n in range(PER_TEMPLATE_2):
        day, hour, seats = 2 + n, 9 + n, 4 + 2 * n
        start, end = f"2024-01-0{day}T{hour:02d}:00:00Z", f"2024-01-0{day}T{hour + 1:02d}:00:00Z"
        free = world.call("search_available_rooms", start_time=start, end_time=end, min_capacity=seats)
        drafts.append(
            Draft(
                "real_time",
                f"1月{day}日{hour}点到{hour + 1}点（UTC）现在还有几间至少能坐{seats}人的空会议室？",
                [call("search_available_rooms", start_time=start, end_time=end, min_capacity=seats)],
                ["search_available_rooms", "list_rooms", "get_room_schedule"],
                f"现在还有{free['total']}间空会议室。",
                whitelist=[[str(free["total"])]],
                answer_fields=["total"],
                apps=APPS_2,
            )
        )
    pending = [
        a
        for a in world.rows("calendar_attendees", {"response": "needs_action"})
        if a["event_id"] > "EVT-000300"
    ][:PER_TEMPLATE_2]
    for a in pending:
        eid, pid = a["event_id"], a["person_id"]
        title = world.call("get_event", event_id=eid)["event"]["title"]
        drafts.append(
            Draft(
                "operation",
                f"我是{pid}，请帮我接受日程{eid}的邀请。",
                [call("respond_to_event", event_id=eid, person_id=pid, response="accepted")],
                ["respond_to_event", "get_event", "list_events"],
                f"已接受日程{eid}（{title}）的邀请。",
                state=[
                    {
                        "kind": "field_equals",
                        "table": "calendar_attendees",
                        "where": {"event_id": eid, "person_id": pid},
                        "field": "response",
                        "value": "accepted",
                    }
                ],
                apps=APPS_2,
            )
        )
    return drafts


def maps(world: MockWorld) -> list[Draft]:
    drafts: list[Draft] = []
    places = world.rows("maps_places", {})
    for n, p in enumerate(places[7::97][:PER_TEMPLATE_2]):
        view = world.call("get_place_details", place_id=p["place_id"])["place"]
        drafts += place_drafts(view)
        # a neighbour in the same city: a short drive
        other = next(q for q in places[places.index(p) + 1 :] if q["city"] == p["city"])
        drafts.append(route_draft(world, p, view, other))
        drafts.append(save_place_draft(world, places, n))
    return drafts


def place_drafts(view: dict[str, Any]) -> list[Draft]:
    """A place's name and phone (fixed) and its description (open ended)."""
    pid = view["place_id"]
    summary = (
        f"{view['name']}位于{view['address']}，评分{view['rating']}（{view['review_count']}条评价），"
        f"营业时间{view['opening_hours']}，电话{view['phone']}。"
    )
    return [
        Draft(
            "fixed",
            f"地点{pid}叫什么名字？电话是多少？",
            [call("get_place_details", place_id=pid)],
            ["get_place_details", "search_places", "geocode"],
            f"地点{pid}是{view['name']}，电话{view['phone']}。",
            whitelist=[[view["name"]], [view["phone"]]],
            apps=APPS_2,
        ),
        Draft(
            "open_ended",
            f"给我介绍一下地点{pid}。",
            [call("get_place_details", place_id=pid)],
            ["get_place_details", "search_nearby_places", "search_places"],
            summary,
            references=[summary],
            apps=APPS_2,
        ),
    ]


def route_draft(world: MockWorld, p: dict[str, Any], view: dict[str, Any], other: dict[str, Any]) -> Draft:
    """The drive from a place to `other` now, in minutes (real time)."""
    pid = view["place_id"]
    route = world.call(
        "plan_route",
        origin_lat=p["lat"],
        origin_lon=p["lon"],
        destination_lat=other["lat"],
        destination_lon=other["lon"],
        mode="driving",
    )
    return Draft(
        "real_time",
        f"现在从{view['name']}（{pid}）开车去{other['name']}（{other['place_id']}）要多少分钟？",
        [
            call("get_place_details", place_id=pid),
            call("get_place_details", place_id=other["place_id"]),
            call(
                "plan_route",
                origin_lat=p["lat"],
                origin_lon=p["lon"],
                destination_lat=other["lat"],
                destination_lon=other["lon"],
                mode="driving",
            ),
        ],
        ["plan_route", "get_place_details", "geocode", "search_nearby_places"],
        f"开车大约需要{route['duration_minutes']}分钟。",
        whitelist=[[str(route["duration_minutes"])]],
        answer_fields=["duration_minutes"],
        apps=APPS_2,
    )


def save_place_draft(world: MockWorld, places: list[dict[str, Any]], n: int) -> Draft:
    """User MU<n+1> saving a place they have not saved (operation)."""
    uid = f"MU{n + 1:03d}"
    saved = {r["place_id"] for r in world.rows("maps_saved_places", {"user_id": uid})}
    target = next(q for q in places[5 + 31 * n :] if q["place_id"] not in saved)
    return Draft(
        "operation",
        f"我是用户{uid}，请把{target['name']}（{target['place_id']}）加到我的收藏，标签写“想去”。",
        [call("save_place", user_id=uid, place_id=target["place_id"], label="想去")],
        ["save_place", "list_saved_places", "get_place_details"],
        f"已把{target['name']}加入收藏。",
        state=[
            {
                "kind": "field_equals",
                "table": "maps_saved_places",
                "where": {"user_id": uid, "place_id": target["place_id"]},
                "field": "label",
                "value": "想去",
            }
        ],
        apps=APPS_2,
    )


def music(world: MockWorld) -> list[Draft]:
    drafts: list[Draft] = []
    tracks = world.rows("music_tracks", {})[11::173][:PER_TEMPLATE_2]
    for n, t in enumerate(tracks):
        view = world.call("get_track", track_id=t["track_id"])["track"]
        tid = view["track_id"]
        drafts.append(
            Draft(
                "fixed",
                f"歌曲{tid}叫什么名字？是谁唱的？",
                [call("get_track", track_id=tid)],
                ["get_track", "search_tracks", "get_artist"],
                f"歌曲{tid}是{view['artist']}的《{view['title']}》。",
                whitelist=[[view["title"]], [view["artist"]]],
                apps=APPS_2,
            )
        )
        drafts.append(
            Draft(
                "real_time",
                f"歌曲{tid}现在的播放量是多少？",
                [call("get_track", track_id=tid)],
                ["get_track", "search_tracks", "get_recently_played"],
                f"《{view['title']}》现在的播放量是{view['play_count']}次。",
                whitelist=[[str(view["play_count"])]],
                answer_fields=["play_count"],
                apps=APPS_2,
            )
        )
        album = world.call("get_album", album_id=view["album_id"])
        songs = "、".join(f"《{s['title']}》" for s in album["tracks"])
        summary = (
            f"专辑《{album['album']['title']}》（{view['album_id']}）发行于{album['album']['release_year']}年，"
            f"共{len(album['tracks'])}首歌，总时长{album['total_duration_s']}秒：{songs}。"
        )
        drafts.append(
            Draft(
                "open_ended",
                f"介绍一下专辑{view['album_id']}。",
                [call("get_album", album_id=view["album_id"])],
                ["get_album", "get_artist", "search_tracks"],
                summary,
                references=[summary],
                apps=APPS_2,
            )
        )
        uid = f"LN{n + 2:03d}"
        liked = {r["track_id"] for r in world.rows("music_likes", {"user_id": uid})}
        target = (
            tid if tid not in liked else next(r["track_id"] for r in tracks if r["track_id"] not in liked)
        )
        drafts.append(
            Draft(
                "operation",
                f"我是用户{uid}，帮我把歌曲{target}加到我喜欢的歌里。",
                [call("like_track", user_id=uid, track_id=target)],
                ["like_track", "list_liked_tracks", "get_track"],
                f"已把歌曲{target}加入你喜欢的歌曲。",
                state=[
                    {
                        "kind": "row_exists",
                        "table": "music_likes",
                        "where": {"user_id": uid, "track_id": target},
                    }
                ],
                apps=APPS_2,
            )
        )
    return drafts


def takeout(world: MockWorld) -> list[Draft]:
    drafts = restaurant_drafts(world)
    orders = world.rows("takeout_orders", {})
    drafts += order_summary_drafts(world, orders)
    # the last orders are still on their way at the task clock
    recent = [world.call("get_takeout_order", order_id=o["order_id"])["order"] for o in orders[-12:]]
    drafts += order_status_drafts(recent)
    cancellable = [v for v in recent if v["order_status"] in ("placed", "preparing")][:PER_TEMPLATE_2]
    drafts += cancel_order_drafts(cancellable)
    # few orders are still cancellable: rating a delivered order fills the operation template
    unrated = [o["order_id"] for o in orders if o["rating"] is None and o["cancelled_at"] is None]
    return drafts + rate_order_drafts(unrated[: PER_TEMPLATE_2 - len(cancellable)])


def restaurant_drafts(world: MockWorld) -> list[Draft]:
    """A restaurant's name and minimum order (fixed)."""
    drafts: list[Draft] = []
    for r in world.rows("takeout_restaurants", {})[2::11][:PER_TEMPLATE_2]:
        view = world.call("get_restaurant", restaurant_id=r["restaurant_id"])["restaurant"]
        rid = view["restaurant_id"]
        drafts.append(
            Draft(
                "fixed",
                f"餐厅{rid}叫什么？起送价是多少元？",
                [call("get_restaurant", restaurant_id=rid)],
                ["get_restaurant", "search_restaurants", "get_menu"],
                f"餐厅{rid}是{view['name']}，起送价{amount(view['min_order'])}元。",
                whitelist=[[view["name"]], [amount(view["min_order"])]],
                apps=APPS_2,
            )
        )
    return drafts


def order_summary_drafts(world: MockWorld, orders: list[dict[str, Any]]) -> list[Draft]:
    """An order's summary (open ended)."""
    drafts: list[Draft] = []
    for o in orders[4::53][:PER_TEMPLATE_2]:
        view = world.call("get_takeout_order", order_id=o["order_id"])["order"]
        oid = view["order_id"]
        dishes = "、".join(f"{i['name']}{i['quantity']}份" for i in view["items"])
        summary = (
            f"订单{oid}在{view['restaurant_name']}下单，点了{dishes}，菜品{amount(view['subtotal'])}元，"
            f"配送费{amount(view['delivery_fee'])}元，共{amount(view['total'])}元，"
            f"状态：{ORDER_STATUS_ZH[view['order_status']]}。"
        )
        drafts.append(
            Draft(
                "open_ended",
                f"帮我总结一下外卖订单{oid}。",
                [call("get_takeout_order", order_id=oid)],
                ["get_takeout_order", "list_takeout_orders", "get_restaurant"],
                summary,
                references=[summary],
                apps=APPS_2,
            )
        )
    return drafts


def order_status_drafts(recent: list[dict[str, Any]]) -> list[Draft]:
    """Where a recent order is now (real time)."""
    drafts: list[Draft] = []
    for view in recent[:PER_TEMPLATE_2]:
        oid, status = view["order_id"], view["order_status"]
        drafts.append(
            Draft(
                "real_time",
                f"我的外卖订单{oid}现在到哪一步了？",
                [call("get_takeout_order", order_id=oid)],
                ["get_takeout_order", "list_takeout_orders", "get_restaurant"],
                f"订单{oid}当前状态：{ORDER_STATUS_ZH[status]}（{status}）。",
                whitelist=[[ORDER_STATUS_ZH[status], status]],
                answer_fields=["order_status"],
                apps=APPS_2,
            )
        )
    return drafts


def cancel_order_drafts(cancellable: list[dict[str, Any]]) -> list[Draft]:
    """Cancelling an order not on its way yet (operation)."""
    drafts: list[Draft] = []
    for view in cancellable:
        oid = view["order_id"]
        drafts.append(
            Draft(
                "operation",
                f"请帮我取消外卖订单{oid}，不想要了。",
                [call("cancel_takeout_order", order_id=oid, reason="不想要了")],
                ["cancel_takeout_order", "get_takeout_order", "list_takeout_orders"],
                f"订单{oid}已取消。",
                state=[
                    {
                        "kind": "field_equals",
                        "table": "takeout_orders",
                        "where": {"order_id": oid},
                        "field": "cancelled_at",
                        "value": format_time(CLOCK),
                    }
                ],
                apps=APPS_2,
            )
        )
    return drafts


def rate_order_drafts(order_ids: list[str]) -> list[Draft]:
    """Rating a delivered order five stars (operation)."""
    drafts: list[Draft] = []
    for oid in order_ids:
        drafts.append(
            Draft(
                "operation",
                f"外卖订单{oid}我想给5星好评，评价写“很好吃”。",
                [call("rate_takeout_order", order_id=oid, rating=5, comment="很好吃")],
                ["rate_takeout_order", "get_takeout_order", "list_takeout_orders"],
                f"已给订单{oid}打了5星。",
                state=[
                    {
                        "kind": "field_equals",
                        "table": "takeout_orders",
                        "where": {"order_id": oid},
                        "field": "rating",
                        "value": 5,
                    }
                ],
                apps=APPS_2,
            )
        )
    return drafts


def build(draft: Draft, number: int) -> Task:
    world = MockWorld(draft.apps, seed=0, clock=CLOCK)
    try:
        for c in draft.calls:
            world.call(c.name, **c.arguments)  # raises if a golden call fails
    finally:
        world.close()
    meta: dict[str, Any] = {"type": draft.kind, "lang": "zh"}
    if draft.answer_fields:
        meta["answer_fields"] = draft.answer_fields
    answer = None
    if draft.whitelist:
        answer = AnswerSpec(whitelist=draft.whitelist)
    elif draft.references:
        answer = AnswerSpec(references=draft.references)
    return Task(
        id=f"ctoolzh-{draft.kind.replace('_', '-')}-{number:03d}",
        query=draft.query,
        apps=draft.apps,
        tools=draft.tools,
        golden=[GoldenStep(action=c) for c in draft.calls]
        + [GoldenStep(action=FinalAnswer(text=draft.answer))],
        answer=answer,
        expected_state=draft.state,
        category=draft.kind,
        clock=CLOCK,
        seed=0,
        metadata={"ctooleval": meta},
    )


def main() -> None:
    world = MockWorld(APPS, seed=0, clock=CLOCK)
    try:
        drafts = [*express(world), *messaging(world)]
    finally:
        world.close()
    world = MockWorld(APPS_2, seed=0, clock=CLOCK)
    try:
        drafts += [*calendar(world), *maps(world), *music(world), *takeout(world)]
    finally:
        world.close()
    tasks = [build(d, i) for i, d in enumerate(drafts, 1)]
    TaskSet(tasks).dump(OUT)
    print(f"wrote {len(tasks)} tasks to {OUT}")


if __name__ == "__main__":
    main()
