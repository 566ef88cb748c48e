"""The zh locale of the CToolEval-style apps: `express_zh` and `messaging_zh`, the express and
messaging apps with Chinese data (people's names, addresses, goods, messages, group names) and
Chinese API descriptions.

Each is its English app with the same APIs, rules and tables, seeded the same way (so its data
has the same shape), and then its text columns rewritten in Chinese through the tables below:
the English apps' seeding is untouched, so their state hashes stay what they were. Values that
APIs take as codes stay as they are: cities (`Nanjing`, the express app's enum), statuses,
services and ids. Tasks name these apps in `apps` (fixtures/mock_tasks/ctool_zh.jsonl).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Final

from sqlite_utils import Database

from toolgym.mocks.apps.ctool.express import ExpressApp
from toolgym.mocks.apps.ctool.messaging import BODIES, DAYS, GROUP_TOPICS, OPENERS, MessagingApp

GIVEN_NAMES: Final = {
    "Wei": "伟", "Fang": "芳", "Lei": "磊", "Min": "敏", "Jing": "静", "Tao": "涛", "Yan": "燕",
    "Hui": "慧", "Jun": "军", "Li": "丽", "Ning": "宁", "Qiang": "强", "Xin": "欣", "Yu": "宇",
    "Zhen": "真", "Mei": "梅", "Hao": "浩", "Lan": "兰", "Bo": "波", "Chen": "晨",
}  # fmt: skip
FAMILY_NAMES: Final = {
    "Wang": "王", "Li": "李", "Zhang": "张", "Liu": "刘", "Chen": "陈", "Yang": "杨", "Zhao": "赵",
    "Huang": "黄", "Zhou": "周", "Wu": "吴", "Xu": "徐", "Sun": "孙", "Ma": "马", "Zhu": "朱",
    "Hu": "胡", "Guo": "郭",
}  # fmt: skip
CITIES: Final = {
    "Beijing": "北京", "Shanghai": "上海", "Guangzhou": "广州", "Shenzhen": "深圳", "Hangzhou": "杭州",
    "Chengdu": "成都", "Wuhan": "武汉", "Nanjing": "南京", "Xi'an": "西安", "Chongqing": "重庆",
}  # fmt: skip
STREETS: Final = {
    "Renmin": "人民", "Jiefang": "解放", "Zhongshan": "中山", "Heping": "和平", "Xinhua": "新华",
    "Jianshe": "建设", "Wenhua": "文化", "Chaoyang": "朝阳",
}  # fmt: skip
GOODS: Final = {
    "documents": "文件", "clothes": "衣服", "books": "图书", "electronics": "电子产品", "tea": "茶叶",
    "gift box": "礼盒", "shoes": "鞋子",
}  # fmt: skip
ADDRESS_LABELS: Final = {"Home": "家", "Office": "公司", "Parents": "父母家", "Friend": "朋友家"}
CANCEL_REASONS: Final = {
    "sender changed plans": "寄件人改变计划", "wrong address": "地址填错", "item no longer needed": "不再需要寄送",
}  # fmt: skip
GROUPS: Final = dict(zip(GROUP_TOPICS, (
    "徒步俱乐部", "读书会", "凤凰项目组", "周五羽毛球", "2015届同学", "家人", "吃货群", "摄影爱好者",
    "创业者联盟", "语言交换", "桌游局", "骑行队", "5B室友", "电影之夜", "旅行搭子",
), strict=True))  # fmt: skip
OPENINGS: Final = dict(zip(OPENERS, (
    "你好", "嘿", "早上好", "问一下", "顺便说一句", "好消息", "提醒一下", "谢谢",
), strict=True))  # fmt: skip
DAY_WORDS: Final = dict(zip(DAYS, ("今天", "明天", "周一", "周五", "这个周末", "下周"), strict=True))
BODY_TEMPLATES: Final = dict(zip(BODIES, (
    "我们{day}还见面吗？", "文件已经发到你的邮箱了。", "餐厅订好了，{day}晚上7点。", "你有空的时候给我打个电话好吗？",
    "会议改到{day}了。", "我会晚到十分钟。", "你看到照片了吗？", "我们AA吧。", "包裹今天到了。", "生日快乐！",
    "{day}谁带零食？", "报告{day}要交。", "车站见。", "我找到你想要的那本书了。",
), strict=True))  # fmt: skip
BIOS: Final = {
    "": "",
    "Coffee first.": "先喝咖啡。",
    "Out hiking": "徒步中",
    "Busy, text me": "忙，发消息",
    "Hello!": "你好！",
}
REQUEST_NOTES: Final = {
    "Hi, it's me from the conference": "你好，我是会上认识的",
    "Let's connect!": "加个好友吧！",
    "": "",
}


EXPRESS_APIS: Final = {
    "list_service_types": "快递服务类型列表：各类服务的时效和价格。",
    "estimate_shipping_fee": "按重量、距离和服务类型估算快递运费和送达时间。",
    "find_service_points": "查询某个城市的快递服务点（可寄件、取件的网点）。",
    "list_saved_addresses": "寄件人的地址簿（保存的收件人）。",
    "save_address": "把收件人保存到寄件人的地址簿。",
    "create_shipment": "寄快递：预约上门揽收，返回运单号和运费。",
    "get_shipment": "查询快递详情：寄件人、收件人、物品、重量、运费、当前状态和预计送达时间。",
    "track_shipment": "跟踪快递物流：到目前为止的物流记录和当前状态。",
    "list_shipments": "寄件人的快递列表，按时间倒序，可按状态筛选。",
    "cancel_shipment": "取消还没被揽收的快递，运费不收取。",
    "change_delivery_address": "修改还没从始发分拣中心发出的快递的收货地址，换城市会重新计费。",
    "get_customer_profile": "寄件人资料：姓名、电话、揽收城市和地址、寄件数量。",
}
MESSAGING_APIS: Final = {
    "get_user_profile": "用户的公开资料（昵称、签名）和好友数量。",
    "search_users": "按用户名或昵称搜索用户，最多20个。",
    "list_friends": "用户的好友列表（按昵称）。",
    "send_friend_request": "向其他用户发送好友申请，对方同意后成为好友。",
    "list_friend_requests": "用户收到（或发出）的好友申请，按时间倒序。",
    "respond_to_friend_request": "同意或拒绝待处理的好友申请。",
    "delete_friend": "删除好友（双方都删除），聊天记录保留。",
    "create_group": "创建群聊，群主和部分好友入群。",
    "join_group": "加入公开的群。",
    "invite_to_group": "邀请好友加入自己所在的群。",
    "leave_group": "退出群聊，群主不能退出自己的群。",
    "list_group_members": "群的详情和成员（群主在前）。",
    "list_my_groups": "用户加入的群。",
    "send_message": "给好友或自己所在的群发送消息。",
    "list_conversations": "用户的会话列表，按最近活跃排序，含最后一条消息和未读数。",
    "get_messages": "分页查看某个会话的聊天消息，最新的在前，不标记已读。",
    "recall_message": "撤回自己发送的消息，仅限发送后2分钟内。",
    "mark_conversation_read": "把会话里的消息全部标为已读。",
    "mark_conversation_unread": "把会话中别人发的最新一条消息重新标为未读。",
    "get_unread_counts": "各会话的未读消息数和未读总数。",
}


def zh_name(english: str, *, family_first: bool) -> str:
    """'Wang Wei' (family first) or 'Wei Wang' -> '王伟'."""
    a, b = english.split(" ")
    family, given = (a, b) if family_first else (b, a)
    return FAMILY_NAMES[family] + GIVEN_NAMES[given]


_ADDRESS = re.compile(r"^(\d+) (\w+) (?:Road|Street), Building (\d+)$")
_POINT = re.compile(r"^(.+) (\w+) Service Point (\d+)$")


def zh_address(english: str) -> str:
    """'88 Jiefang Road, Building 2' -> '解放路88号2栋' (a street address as the apps seed it)."""
    m = _ADDRESS.match(english)
    if m is None:
        raise ValueError(f"not a seeded street address: {english!r}")
    number, street, building = m.groups()
    kind = "街" if english.split(",")[0].endswith("Street") else "路"
    return f"{STREETS[street]}{kind}{number}号{building}栋"


def zh_message(english: str) -> str:
    """'Hi, are we still meeting today?' -> '你好，我们今天还见面吗？'."""
    opener, body = english.split(", ", 1)
    for template, zh in BODY_TEMPLATES.items():
        for day, zh_day in DAY_WORDS.items():
            if template.format(day=day) == body:
                return f"{OPENINGS[opener]}，{zh.format(day=zh_day)}"
    raise ValueError(f"not a seeded message: {english!r}")


def _rewrite(db: Database, table: str, key: str, columns: Mapping[str, Callable[[str], str]]) -> None:
    """Every row's `columns` passed through their functions (None stays None), keyed by `key`."""
    names = ", ".join(columns)
    for row in db.execute(f"SELECT {key}, {names} FROM {table}").fetchall():
        values = [None if v is None else fn(v) for v, fn in zip(row[1:], columns.values(), strict=True)]
        sets = ", ".join(f"{c} = ?" for c in columns)
        db.execute(f"UPDATE {table} SET {sets} WHERE {key} = ?", [*values, row[0]])


def _family_first(name: str) -> str:
    return zh_name(name, family_first=True)


def _point_name(english: str) -> str:
    m = _POINT.match(english)
    if m is None:
        raise ValueError(f"not a seeded service point: {english!r}")
    city, street, k = m.groups()
    return f"{CITIES[city]}{STREETS[street]}路服务点{k}"


class ExpressZhApp(ExpressApp):
    name = "express_zh"
    description = (
        "快递服务：查询运费、寄件、跟踪包裹、在发出前改地址、在揽收前取消。城市参数用拼音代码（如 Nanjing）。"
    )
    api_descriptions = EXPRESS_APIS

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        super().seed(db, rng, clock)
        _rewrite(db, "express_customers", "customer_id", {"name": _family_first, "address": zh_address})
        _rewrite(
            db,
            "express_address_book",
            "address_id",
            {"label": ADDRESS_LABELS.__getitem__, "name": _family_first, "address": zh_address},
        )
        _rewrite(
            db,
            "express_shipments",
            "tracking_number",
            {
                "sender_name": _family_first,
                "sender_address": zh_address,
                "recipient_name": _family_first,
                "recipient_address": zh_address,
                "item_description": GOODS.__getitem__,
                "courier": _family_first,
                "cancel_reason": CANCEL_REASONS.__getitem__,
            },
        )
        _rewrite(db, "express_service_points", "point_id", {"name": _point_name, "address": zh_address})


class MessagingZhApp(MessagingApp):
    name = "messaging_zh"
    description = "即时通讯应用：好友与好友申请、群聊、发送、阅读和撤回消息、未读数。"
    api_descriptions = MESSAGING_APIS

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        super().seed(db, rng, clock)
        _rewrite(
            db,
            "messaging_users",
            "user_id",
            {"display_name": lambda n: zh_name(n, family_first=False), "bio": BIOS.__getitem__},
        )
        _rewrite(db, "messaging_friend_requests", "request_id", {"message": REQUEST_NOTES.__getitem__})
        _rewrite(db, "messaging_groups", "group_id", {"name": GROUPS.__getitem__})
        _rewrite(db, "messaging_messages", "message_id", {"content": zh_message})


ZH_APPS: Final = (ExpressZhApp, MessagingZhApp)
