"""Regenerate fixtures/mock_tasks/ctool_zh.jsonl: Chinese CToolEval-style tasks on the zh locale of
the express and messaging apps (mocks/apps/ctool/zh.py), in CToolEval's four query types:

- fixed: a question with one right answer, checked by keywords (Chinese-aware matching);
- open_ended: a summary or description, with a reference answer (judged against it, or scored by
  similarity without a judge);
- real_time: a question about a value that changes with time (a parcel's status, unread
  messages), checked against the values the episode's own calls returned;
- operation: a request that changes state (cancel a parcel, send a message), checked on the state.

Every task's world holds both apps, so a retriever picks from all their tools (`tools` lists the
gold tools and a few distractors: the gold-tools setting). The golden calls are run here on a
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
PER_TEMPLATE = 10

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
    picked = shipments(world)[:PER_TEMPLATE]
    for s in picked:
        view = world.call("get_shipment", tracking_number=s["tracking_number"])["shipment"]
        tn, rec = view["tracking_number"], view["recipient"]
        drafts.append(
            Draft(
                "fixed",
                f"快递{tn}的收件人是谁？寄的是什么东西？",
                [call("get_shipment", tracking_number=tn)],
                ["get_shipment", "track_shipment", "list_shipments"],
                f"快递{tn}的收件人是{rec['name']}，寄的是{view['item_description']}。",
                whitelist=[[rec["name"]], [view["item_description"]]],
            )
        )
        drafts.append(
            Draft(
                "fixed",
                f"帮我查一下快递{tn}花了多少运费，一共多少公斤？",
                [call("get_shipment", tracking_number=tn)],
                ["get_shipment", "estimate_shipping_fee", "track_shipment"],
                f"快递{tn}的运费是{yuan(view['fee'])}元，重{view['weight_kg']}公斤。",
                whitelist=[[yuan(view["fee"])], [str(view["weight_kg"])]],
            )
        )
        track = world.call("track_shipment", tracking_number=tn)
        status = track["shipment_status"]
        drafts.append(
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
            )
        )
        summary = (
            f"快递{tn}由{view['sender']['name']}从{CITY_ZH[view['sender']['city']]}寄往"
            f"{CITY_ZH[rec['city']]}的{rec['name']}（{rec['address']}），物品是{view['item_description']}，"
            f"重{view['weight_kg']}公斤，运费{yuan(view['fee'])}元，当前状态为{STATUS_ZH[view['shipment_status']]}。"
        )
        drafts.append(
            Draft(
                "open_ended",
                f"请用一段话介绍一下快递{tn}的情况。",
                [call("get_shipment", tracking_number=tn)],
                ["get_shipment", "track_shipment", "get_customer_profile"],
                summary,
                references=[summary],
            )
        )
    cancellable = [
        r["tracking_number"]
        for r in world.rows("express_shipments", {})
        if r["cancelled_at"] is None
        and world.call("track_shipment", tracking_number=r["tracking_number"])["shipment_status"] == "created"
    ][:PER_TEMPLATE]
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


def build(draft: Draft, number: int) -> Task:
    world = MockWorld(APPS, seed=0, clock=CLOCK)
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
        apps=APPS,
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
    tasks = [build(d, i) for i, d in enumerate(drafts, 1)]
    TaskSet(tasks).dump(OUT)
    print(f"wrote {len(tasks)} tasks to {OUT}")


if __name__ == "__main__":
    main()
