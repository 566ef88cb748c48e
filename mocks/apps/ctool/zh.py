"""The zh locale of the CToolEval-style apps: `express_zh` and `messaging_zh`, the express and
messaging apps with Chinese data (people's names, addresses, goods, messages, group names).

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
