"""The zh locale of the CToolEval-style apps: `express_zh`, `messaging_zh`, `calendar_zh`,
`maps_zh`, `music_zh` and `takeout_zh`, the six apps with Chinese data (people's names, addresses,
goods, dishes, messages, group, room, place, song and playlist names) and Chinese API descriptions.

Each is its English app with the same APIs, rules and tables, seeded the same way (so its data
has the same shape), and then its text columns rewritten in Chinese through the tables below:
the English apps' seeding is untouched, so their state hashes stay what they were. Values that
APIs take as codes stay as they are: cities (`Nanjing`, the express app's enum), statuses,
services, districts, cuisines, genres, departments, buildings and ids; a maps street address
to geocode keeps its pinyin form ("120 Zhongshan Road"), since the streets table is the
geocoder's own (place names and place addresses are Chinese). Tasks name these apps in `apps` (fixtures/mock_tasks/ctool_zh.jsonl).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Final

from toolgym.mocks.apps.ctool.calendar import MEETING_TITLES, ROOM_NAMES, CalendarApp
from toolgym.mocks.apps.ctool.express import ExpressApp
from toolgym.mocks.apps.ctool.maps import NAME_PARTS, MapsApp
from toolgym.mocks.apps.ctool.messaging import BODIES, DAYS, GROUP_TOPICS, OPENERS, MessagingApp
from toolgym.mocks.apps.ctool.music import ADJECTIVES, NOUNS, MusicApp, plural
from toolgym.mocks.apps.ctool.takeout import CUISINES, TakeoutApp

if TYPE_CHECKING:
    from sqlite_utils import Database

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


# ---- calendar ----------------------------------------------------------------------------------

ROOMS: Final = dict(zip(ROOM_NAMES, (
    "莲花", "翠竹", "牡丹", "兰花", "玉石", "珍珠", "仙鹤", "杨柳", "灯笼", "峰顶",
), strict=True))  # fmt: skip
TITLES: Final = {
    **dict(zip(MEETING_TITLES, (
        "周例会", "设计评审", "迭代计划会", "预算沟通会", "客户电话会", "一对一沟通", "招聘复盘会",
        "路线图评审", "回顾会", "上线准备会", "合同评审", "头脑风暴",
    ), strict=True)),
    "Interview": "面试", "Focus time": "专注时间", "Training": "培训", "Vendor visit": "供应商来访",
}  # fmt: skip
LOCATIONS: Final = {"": "", "Online": "线上", "Desk": "工位"}
CALENDAR_APIS: Final = {
    "search_people": "按姓名和/或部门查找同事（邀请他们需要人员编号）。",
    "list_rooms": "会议室列表：容量和设备，可按楼栋和会议室编号筛选。",
    "get_room": "一个会议室的详情。",
    "search_available_rooms": "在时间段内没有预订的会议室，小的在前。",
    "get_room_schedule": "会议室某一天已确认的预订。",
    "book_room": "预订会议室；该时段已被预订时返回409。",
    "cancel_room_booking": "取消还没结束的会议室预订，会议室重新空出。",
    "list_my_bookings": "某人预订的会议室，最近的在前。",
    "create_event": "创建日程，邀请参会人，可同时预订会议室。",
    "get_event": "日程详情，含参会人和他们的答复。",
    "update_event": "修改日程；改时间会同时移动会议室预订（会议室那时已被占用则返回409）。",
    "delete_event": "为所有人删除日程，其会议室预订一并取消。",
    "respond_to_event": "接受、拒绝或暂定接受邀请。",
    "list_events": "某人组织或受邀、与时间范围重叠的日程，按时间排序。",
    "find_common_free_slot": "某一天所有人都没有（未拒绝的）日程的空闲时段。",
}


def _room_name(english: str) -> str:
    """'Lotus A1' -> '莲花厅A1'."""
    word, code = english.rsplit(" ", 1)
    return f"{ROOMS[word]}厅{code}"


def _location(english: str) -> str:
    return LOCATIONS[english] if english in LOCATIONS else _room_name(english)


def _given_first(name: str) -> str:
    return zh_name(name, family_first=False)


class CalendarZhApp(CalendarApp):
    name = "calendar_zh"
    description = "会议室与日历：查找并预订空闲会议室，创建、修改、删除带参会人的日程，查看个人日程，找大家都有空的时段。"
    api_descriptions = CALENDAR_APIS

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        super().seed(db, rng, clock)
        _rewrite(db, "calendar_people", "person_id", {"name": _given_first})
        _rewrite(db, "calendar_rooms", "room_id", {"name": _room_name})
        _rewrite(db, "calendar_bookings", "booking_id", {"title": TITLES.__getitem__})
        _rewrite(db, "calendar_events", "event_id", {"title": TITLES.__getitem__, "location": _location})


# ---- maps --------------------------------------------------------------------------------------

DISTRICTS: Final = {
    "Dongcheng": "东城区", "Xicheng": "西城区", "Chaoyang": "朝阳区", "Haidian": "海淀区", "Fengtai": "丰台区",
    "Huangpu": "黄浦区", "Xuhui": "徐汇区", "Jing'an": "静安区", "Pudong": "浦东新区", "Changning": "长宁区",
    "Tianhe": "天河区", "Yuexiu": "越秀区", "Haizhu": "海珠区", "Liwan": "荔湾区", "Baiyun": "白云区",
    "Futian": "福田区", "Nanshan": "南山区", "Luohu": "罗湖区", "Bao'an": "宝安区", "Longgang": "龙岗区",
    "Xihu": "西湖区", "Shangcheng": "上城区", "Gongshu": "拱墅区", "Binjiang": "滨江区", "Yuhang": "余杭区",
    "Hongkou": "虹口区",
}  # fmt: skip
MAP_STREETS: Final = {
    "Zhongshan Road": "中山路", "Renmin Avenue": "人民大道", "Jiefang Road": "解放路", "Heping Street": "和平街",
    "Xinhua Road": "新华路", "Jianguo Road": "建国路", "Chang'an Avenue": "长安街", "Yan'an Road": "延安路",
    "Dongfeng Road": "东风路", "Huaihai Road": "淮海路", "Wenhua Street": "文化街", "Binjiang Avenue": "滨江大道",
}  # fmt: skip
PLACE_WORDS: Final[dict[str, dict[str, str]]] = {
    "restaurant": {
        "Golden": "金", "Jade": "玉", "Old Town": "老城", "Lucky": "福运", "Red Lantern": "红灯笼", "Spicy": "麻辣",
        "Harbor": "港湾", "Bamboo": "竹林", "Noodle House": "面馆", "Dumpling Bar": "饺子馆", "Hotpot": "火锅",
        "Roast Duck": "烤鸭店", "Dim Sum": "点心", "Kitchen": "厨房", "Bistro": "小馆",
    },
    "cafe": {
        "Morning": "晨光", "Corner": "街角", "Cloud": "云朵", "Maple": "枫叶", "Velvet": "丝绒", "Blue Door": "蓝门",
        "Coffee": "咖啡", "Cafe": "咖啡馆", "Tea House": "茶馆",
    },
    "hotel": {
        "Grand": "大", "Riverside": "江畔", "Garden": "花园", "Skyline": "天际", "Heritage": "老宅", "Lotus": "荷花",
        "Hotel": "酒店", "Inn": "客栈", "Suites": "公寓酒店",
    },
    "hospital": {
        "First People's": "第一人民", "Central": "中心", "Union": "协和", "Children's": "儿童",
        "Traditional Medicine": "中医", "Hospital": "医院",
    },
    "pharmacy": {
        "Health": "健康", "Kangjian": "康健", "Family": "家庭", "Green Cross": "绿十字", "Pharmacy": "药房",
        "Drugstore": "大药房",
    },
    "bank": {
        "Merchants": "招商", "Commerce": "商业", "Agricultural": "农业", "Construction": "建设", "Harbor": "港湾",
        "Bank Branch": "银行支行",
    },
    "supermarket": {
        "Fresh": "新鲜", "Daily": "日日", "Happy": "欢乐", "Family": "家家", "Mart": "便利店",
        "Supermarket": "超市", "Market": "市场",
    },
    "gas_station": {
        "Sino": "中华", "East": "东方", "Highway": "高速", "City": "城市", "Petrol Station": "加油站",
        "Gas Station": "加气站",
    },
    "parking": {
        "Central": "中央", "Plaza": "广场", "Underground": "地下", "Riverside": "江畔", "Car Park": "停车场",
        "Parking Lot": "停车库",
    },
    "park": {
        "People's": "人民", "Lakeside": "湖滨", "Century": "世纪", "Peach Blossom": "桃花", "Riverside": "滨江",
        "Park": "公园", "Gardens": "园林",
    },
    "museum": {
        "City": "市", "Provincial": "省", "Science": "科学", "Art": "艺术", "Silk": "丝绸", "Museum": "博物馆",
        "Gallery": "美术馆",
    },
    "subway_station": {
        "Line 1": "地铁1号线", "Line 2": "地铁2号线", "Line 3": "地铁3号线", "Line 4": "地铁4号线", "Station": "站",
    },
    "shopping_mall": {
        "Wanda": "万达", "Times": "时代", "Joy City": "大悦城", "Galaxy": "银河", "Starlight": "星光",
        "Plaza": "广场", "Mall": "商场", "Center": "中心",
    },
    "cinema": {
        "Starlight": "星光", "Golden Reel": "金胶片", "Imax": "巨幕", "Palace": "宫", "Cinema": "影院",
        "Cineplex": "影城",
    },
    "gym": {
        "Iron": "铁人", "Pulse": "脉动", "Fit": "健美", "Peak": "巅峰", "Gym": "健身房", "Fitness": "健身中心",
        "Studio": "工作室",
    },
}  # fmt: skip
SAVED_LABELS: Final = {"Favourite": "最爱", "Want to go": "想去", "Work": "工作", "": ""}
REVIEWS: Final = {
    "Great spot.": "好地方。", "A bit crowded.": "有点挤。", "Friendly staff.": "服务热情。",
    "Would come back.": "还会再来。",
    # takeout's order reviews
    "Tasty!": "好吃！", "Arrived warm.": "送到还是热的。", "A bit salty.": "有点咸。",
}  # fmt: skip
MAPS_APIS: Final = {
    "geocode": "把地址、地点名称或城市名转换成坐标，最佳匹配在前（街道地址用拼音，如 120 Zhongshan Road）。",
    "reverse_geocode": "坐标附近（1公里内）最近的街道地址、区和城市。",
    "plan_route": "两点之间步行、骑行、公交或驾车的距离和用时。",
    "search_nearby_places": "某点周边一定半径内的地点，按距离由近到远，含距离。",
    "search_places": "按文字和条件搜索地点；相关度排序时名称匹配在前，其次按人气。",
    "get_place_details": "地点的全部信息：地址、坐标、评分、电话、营业时间、最新评价。",
    "list_place_categories": "地点类别及每类的地点数。",
    "save_place": "把地点加入用户的收藏。",
    "list_saved_places": "用户收藏的地点，最近收藏的在前。",
    "remove_saved_place": "把地点从用户的收藏中移除。",
    "add_place_review": "评价一个地点（每人一次），更新其平均评分和评价数。",
}


def _place_name(category: str, english: str) -> str:
    """'Golden Hotpot (Zhongshan Road)' -> '金火锅（中山路）'."""
    words = PLACE_WORDS[category]
    base, _, branch = english.partition(" (")
    for first in NAME_PARTS[category][0]:
        for last in NAME_PARTS[category][1]:
            if base == f"{first} {last}":
                zh = words[first] + words[last]
                return f"{zh}（{MAP_STREETS[branch[:-1]]}）" if branch else zh
    raise ValueError(f"not a seeded place name: {english!r}")


_MAP_ADDRESS = re.compile(r"^(\d+) (.+), (.+), (.+)$")


def _map_address(english: str) -> str:
    """'120 Zhongshan Road, Huangpu, Shanghai' -> '上海黄浦区中山路120号'."""
    m = _MAP_ADDRESS.match(english)
    if m is None:
        raise ValueError(f"not a seeded place address: {english!r}")
    number, street, district, city = m.groups()
    return f"{CITIES[city]}{DISTRICTS[district]}{MAP_STREETS[street]}{number}号"


class MapsZhApp(MapsApp):
    name = "maps_zh"
    description = (
        "地图应用（北京、上海、广州、深圳、杭州）：地址与坐标互查、路线规划、搜索周边和地点、收藏与评价。"
        "城市、区和类别参数用英文代码（如 Shanghai、Huangpu、restaurant）。"
    )
    api_descriptions = MAPS_APIS

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        super().seed(db, rng, clock)
        for place_id, category, name in db.execute(
            "SELECT place_id, category, name FROM maps_places"
        ).fetchall():
            db.execute(
                "UPDATE maps_places SET name = ? WHERE place_id = ?", [_place_name(category, name), place_id]
            )
        _rewrite(db, "maps_places", "place_id", {"address": _map_address})
        _rewrite(db, "maps_users", "user_id", {"name": _given_first})
        _rewrite(db, "maps_reviews", "review_id", {"text": REVIEWS.__getitem__})
        for (label,) in db.execute("SELECT DISTINCT label FROM maps_saved_places").fetchall():
            db.execute("UPDATE maps_saved_places SET label = ? WHERE label = ?", [SAVED_LABELS[label], label])


# ---- music -------------------------------------------------------------------------------------

ADJECTIVE_ZH: Final = dict(zip(ADJECTIVES, (
    "午夜", "金色", "沉默", "电光", "纸", "霓虹", "遥远", "深红", "温柔", "狂野", "隐秘", "坠落", "无尽",
    "夏日", "冬日", "破碎", "幸运", "丝绒",
), strict=True))  # fmt: skip
NOUN_ZH: Final = dict(zip(NOUNS, (
    "河流", "心", "城市", "梦", "月亮", "公路", "雨", "火焰", "信", "花园", "山", "海洋", "光", "影子",
    "列车", "回声", "鸟", "天空",
), strict=True))  # fmt: skip
PLAYLISTS: Final = {
    "Chill": "放松", "Workout": "健身", "Road Trip": "自驾旅行", "Focus": "专注", "Favourites": "最爱", "Party": "派对",
}  # fmt: skip
MUSIC_APIS: Final = {
    "search_tracks": "按条件搜索曲库；相关度排序时歌名匹配在歌手和专辑匹配之前。",
    "get_track": "一首歌的详情。",
    "search_artists": "按名字和流派查找歌手，粉丝多的在前。",
    "get_artist": "歌手信息，含专辑和播放最多的五首歌。",
    "get_album": "专辑及其按顺序排列的歌曲。",
    "create_playlist": "创建一个空歌单。",
    "get_playlist": "歌单及其按顺序排列的歌曲。",
    "list_user_playlists": "用户的歌单及各自的歌曲数。",
    "add_track_to_playlist": "把歌加入自己的歌单（同一首歌在歌单里只出现一次）。",
    "remove_track_from_playlist": "从自己的歌单中删除一首歌，后面的歌依次前移。",
    "move_playlist_track": "调整歌单顺序：把一首歌移到新位置，其他歌随之移动。",
    "delete_playlist": "删除自己的歌单。",
    "like_track": "把歌加入用户喜欢的歌曲。",
    "unlike_track": "把歌从用户喜欢的歌曲中移除。",
    "list_liked_tracks": "用户喜欢的歌曲，最近喜欢的在前。",
    "play_track": "立即播放一首歌（播放队列保留在其后）。",
    "add_to_play_queue": "把一首歌加入播放队列，在当前歌曲之后播放。",
    "get_play_queue": "正在播放的歌和队列中的歌，按顺序。",
    "skip_to_next": "立即播放队列中的第一首歌，它离开队列。",
    "get_recently_played": "用户的播放记录，最新的在前。",
}
_LIVE = " (Live)"


def _title(english: str) -> str:
    """'Midnight River' -> '午夜的河流'; ' (Live)' -> '（现场版）'."""
    live = english.endswith(_LIVE)
    adjective, noun = english.removesuffix(_LIVE).split(" ")
    return f"{ADJECTIVE_ZH[adjective]}的{NOUN_ZH[noun]}" + ("（现场版）" if live else "")


_BANDS: Final = {
    f"The {a} {plural(n)}": f"{za}{zn}乐队" for a, za in ADJECTIVE_ZH.items() for n, zn in NOUN_ZH.items()
}


def _artist(english: str) -> str:
    """A band ('The Neon Rains' -> '霓虹雨乐队') or a person ('Wei Wang' -> '王伟')."""
    return _BANDS[english] if english in _BANDS else _given_first(english)


class MusicZhApp(MusicApp):
    name = "music_zh"
    description = "音乐应用：搜索歌曲、歌手和专辑，管理歌单和喜欢的歌曲，播放与播放队列，播放记录。流派参数用英文代码（如 mandopop）。"
    api_descriptions = MUSIC_APIS

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        super().seed(db, rng, clock)
        _rewrite(db, "music_artists", "artist_id", {"name": _artist})
        _rewrite(db, "music_albums", "album_id", {"title": _title})
        _rewrite(db, "music_tracks", "track_id", {"title": _title})
        _rewrite(db, "music_users", "user_id", {"name": _given_first})
        _rewrite(db, "music_playlists", "playlist_id", {"name": PLAYLISTS.__getitem__})


# ---- takeout -----------------------------------------------------------------------------------

RESTAURANT_WORDS: Final = {
    "Chengdu": "成都", "Red Pepper": "红辣椒", "Spice Route": "香料之路", "Panda": "熊猫",
    "Pearl River": "珠江", "Golden Dragon": "金龙", "Harbor": "港湾", "Jade Garden": "翠园",
    "Old Bund": "老外滩", "Lane House": "弄堂", "Jing'an": "静安", "Shikumen": "石库门",
    "Sakura": "樱花", "Kyoto": "京都", "Umami": "鲜味", "Blue Wave": "蓝浪",
    "Brick Oven": "砖炉", "Liberty": "自由", "Urban Grill": "城市烤肉", "Corner": "街角",
    "Lanzhou": "兰州", "Silk Road": "丝路", "Hand-Pulled": "手拉", "Uncle Ma's": "马大叔",
    "Tea Time": "茶时光", "Boba Lab": "珍珠实验室", "Fresh Leaf": "鲜叶", "Cloud Cup": "云杯",
}  # fmt: skip
CUISINE_ZH: Final = {
    "sichuan": "川菜", "cantonese": "粤菜", "shanghainese": "本帮菜", "japanese": "日料", "western": "西餐",
    "noodles": "面馆", "bubble_tea": "奶茶",
}  # fmt: skip
KINDS: Final = {"Kitchen": "厨房", "House": "小馆", "Express": "快餐"}
DISHES: Final = {
    "Mapo Tofu": "麻婆豆腐", "Kung Pao Chicken": "宫保鸡丁", "Twice-Cooked Pork": "回锅肉",
    "Fish in Chili Oil": "水煮鱼", "Dan Dan Noodles": "担担面", "Spicy Wontons": "红油抄手",
    "Dry-Fried Green Beans": "干煸四季豆", "Steamed Rice": "米饭", "Sour Plum Drink": "酸梅汤",
    "Char Siu Rice": "叉烧饭", "Roast Goose": "烧鹅", "Shrimp Dumplings": "虾饺", "Pineapple Bun": "菠萝包",
    "Wonton Noodle Soup": "云吞面", "Congee with Century Egg": "皮蛋瘦肉粥", "Steamed Greens": "白灼青菜",
    "Lemon Tea": "柠檬茶", "Xiaolongbao": "小笼包", "Shengjian Bao": "生煎包", "Braised Pork Belly": "红烧肉",
    "Drunken Chicken": "醉鸡", "Scallion Oil Noodles": "葱油拌面", "Sweet and Sour Ribs": "糖醋小排",
    "Soy Milk": "豆浆", "Salmon Sushi Set": "三文鱼寿司套餐", "Chicken Katsu Curry": "日式炸鸡咖喱饭",
    "Tonkotsu Ramen": "豚骨拉面", "Beef Don": "牛肉饭", "Gyoza": "日式煎饺", "Miso Soup": "味噌汤",
    "Matcha Latte": "抹茶拿铁", "Cheeseburger": "芝士汉堡", "Margherita Pizza": "玛格丽特披萨",
    "Spaghetti Bolognese": "肉酱意面", "Caesar Salad": "凯撒沙拉", "French Fries": "薯条", "Cola": "可乐",
    "Lanzhou Beef Noodles": "兰州牛肉面", "Biang Biang Noodles": "biangbiang面", "Braised Beef Noodles": "红烧牛肉面",
    "Cold Sesame Noodles": "麻酱凉面", "Marinated Egg": "卤蛋", "Cucumber Salad": "拍黄瓜",
    "Brown Sugar Milk Tea": "黑糖奶茶", "Taro Milk Tea": "芋泥奶茶", "Mango Pomelo Sago": "杨枝甘露",
    "Jasmine Green Tea": "茉莉绿茶", "Cheese Foam Oolong": "芝士乌龙", "Egg Tart": "蛋挞",
}  # fmt: skip
ROADS_ZH: Final = {
    "Nanjing": "南京", "Huaihai": "淮海", "Hengshan": "衡山", "Century": "世纪", "Siping": "四平",
    "Wanhangdu": "万航渡", "Zhaojiabang": "肇嘉浜", "Xinzha": "新闸", "Dongfang": "东方",
}  # fmt: skip
TAKEOUT_LABELS: Final = {"Home": "家", "Office": "公司", "Gym": "健身房"}
NOTES: Final = {
    "": "",
    "no cilantro": "不要香菜",
    "extra spicy": "多放辣",
    "please call on arrival": "到了请打电话",
}
ORDER_CANCEL_REASONS: Final = {"ordered by mistake": "点错了"}
TAKEOUT_APIS: Final = {
    "search_restaurants": "按条件搜索餐厅并排序。菜系和区用英文代码（如 sichuan、Xuhui）。",
    "get_restaurant": "餐厅详情：评分、配送费、起送价、出餐时间。",
    "get_menu": "餐厅菜单：价格和每样剩余份数。",
    "get_takeout_account": "用户资料、钱包余额和收货地址。",
    "add_delivery_address": "给用户账户添加收货地址。",
    "top_up_wallet": "给用户钱包充值。",
    "place_takeout_order": "在一家餐厅下外卖订单：锁定库存并从钱包扣款。",
    "reorder_takeout_order": "按今天的价格，从同一家餐厅再点一单同样的菜送到同一地址。",
    "get_takeout_order": "订单的菜品、金额、当前状态和时间线。",
    "list_takeout_orders": "用户的订单，最新的在前。",
    "cancel_takeout_order": "骑手取餐前取消订单：库存退回，钱包支付的金额退款。",
    "rate_takeout_order": "给已送达的订单评分（一次），餐厅平均评分随之更新。",
}
_RESTAURANTS: Final = {
    f"{word} {kind} ({district})": f"{RESTAURANT_WORDS[word]}{zh_kind}（{DISTRICTS[district][:2]}店）"
    for cuisine, (words, _) in CUISINES.items()
    for word in words
    for kind, zh_kind in (
        (cuisine.replace("_", " ").title(), CUISINE_ZH[cuisine]),
        *KINDS.items(),
    )
    for district in ("Huangpu", "Xuhui", "Jing'an", "Pudong", "Changning", "Hongkou")
}
_RESTAURANT_ADDRESS = re.compile(r"^(\d+) (\w+) Road, (.+), Shanghai$")
_ROOM_ADDRESS = re.compile(r"^Room (\d+), (\d+) (\w+) Road$")


def _restaurant_address(english: str) -> str:
    """'88 Huaihai Road, Xuhui, Shanghai' -> '上海徐汇区淮海路88号'."""
    m = _RESTAURANT_ADDRESS.match(english)
    if m is None:
        raise ValueError(f"not a seeded restaurant address: {english!r}")
    number, road, district = m.groups()
    return f"上海{DISTRICTS[district]}{ROADS_ZH[road]}路{number}号"


def _room_address(english: str) -> str:
    """'Room 1203, 88 Xinzha Road' -> '新闸路88号1203室'."""
    m = _ROOM_ADDRESS.match(english)
    if m is None:
        raise ValueError(f"not a seeded delivery address: {english!r}")
    room, number, road = m.groups()
    return f"{ROADS_ZH[road]}路{number}号{room}室"


class TakeoutZhApp(TakeoutApp):
    name = "takeout_zh"
    description = "外卖应用（上海）：搜索餐厅和菜单、下单、再来一单、取消、评价、钱包充值和收货地址。"
    api_descriptions = TAKEOUT_APIS

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        super().seed(db, rng, clock)
        _rewrite(
            db,
            "takeout_restaurants",
            "restaurant_id",
            {"name": _RESTAURANTS.__getitem__, "address": _restaurant_address},
        )
        _rewrite(db, "takeout_menu_items", "item_id", {"name": DISHES.__getitem__})
        _rewrite(db, "takeout_users", "user_id", {"name": _family_first})
        _rewrite(
            db,
            "takeout_addresses",
            "address_id",
            {"label": TAKEOUT_LABELS.__getitem__, "address": _room_address},
        )
        _rewrite(
            db,
            "takeout_orders",
            "order_id",
            {
                "note": NOTES.__getitem__,
                "cancel_reason": ORDER_CANCEL_REASONS.__getitem__,
                "review": REVIEWS.__getitem__,
            },
        )
        for (name,) in db.execute("SELECT DISTINCT name FROM takeout_order_items").fetchall():
            db.execute("UPDATE takeout_order_items SET name = ? WHERE name = ?", [DISHES[name], name])


ZH_APPS: Final = (ExpressZhApp, MessagingZhApp, CalendarZhApp, MapsZhApp, MusicZhApp, TakeoutZhApp)
