"""Instant messaging: users, friends and friend requests, groups, conversations, messages.

Semantics: only friends can message each other directly and only members can post in a group; a
friend request must be answered by its recipient and accepting it makes both users friends; group
owners cannot leave their group and a group never exceeds its member limit. Conversations are
either "DM-<user>-<user>" (the two ids sorted) or a group id. Unread counts come from a per-user
read mark: everything after it that someone else sent and that was not recalled is unread. A
message can be recalled by its sender within 2 simulated minutes of sending it.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import App, Query, Volatile, format_id, read, set_counter, write
from toolgym.mocks.apps.ctool._common import FIRST_NAMES, LAST_NAMES, app_now, iso, utc
from toolgym.mocks.responses import AppError, bad_request, conflict, not_found, ok, paginate, unprocessable
from toolgym.mocks.seeding import insert_rows, pick_name
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

REQUEST_STATUSES: Final = ("pending", "accepted", "declined")
DIRECTIONS: Final = ("incoming", "outgoing")
RESPONSES: Final = ("accept", "decline")
JOIN_MODES: Final = ("open", "invite_only")
RECALL_WINDOW: Final = timedelta(minutes=2)
MAX_MESSAGE_CHARS: Final = 2000
GROUP_LIMIT: Final = 200
RECALLED_TEXT: Final = "[message recalled]"

N_USERS: Final = 80
N_GROUPS: Final = 15
N_MESSAGES: Final = 2000

GROUP_TOPICS: Final = (
    "Hiking Club",
    "Book Circle",
    "Project Phoenix",
    "Badminton Fridays",
    "Class of 2015",
    "Family",
    "Foodies",
    "Photography",
    "Startup Founders",
    "Language Exchange",
    "Board Games",
    "Cycling Team",
    "Apartment 5B",
    "Movie Nights",
    "Travel Buddies",
)
OPENERS: Final = (
    "Hi",
    "Hey",
    "Morning",
    "Quick question",
    "FYI",
    "Good news",
    "Reminder",
    "Thanks",
)
BODIES: Final = (
    "are we still meeting {day}?",
    "I sent the files to your email.",
    "the restaurant is booked for {day} at 7.",
    "can you call me when you are free?",
    "the meeting moved to {day}.",
    "I will be ten minutes late.",
    "did you see the photos?",
    "let's split the bill.",
    "the package arrived today.",
    "happy birthday!",
    "who is bringing snacks {day}?",
    "the report is due {day}.",
    "see you at the station.",
    "I found the book you wanted.",
)
DAYS: Final = ("today", "tomorrow", "on Monday", "on Friday", "this weekend", "next week")


def dm_id(a: str, b: str) -> str:
    """The id of the direct conversation of two users (order does not matter)."""
    x, y = sorted((a, b))
    return f"DM-{x}-{y}"


class MessagingApp(App):
    name = "messaging"
    description = (
        "An instant messaging app: friends and friend requests, group chats, sending, reading and "
        "recalling messages, unread counts."
    )
    version = "1"
    schema = f"""
    CREATE TABLE messaging_users (
        user_id TEXT PRIMARY KEY,
        username TEXT NOT NULL UNIQUE,
        display_name TEXT NOT NULL,
        bio TEXT NOT NULL,
        joined_at TEXT NOT NULL
    );
    CREATE TABLE messaging_friendships (
        user_id TEXT NOT NULL,
        friend_id TEXT NOT NULL,
        since TEXT NOT NULL,
        PRIMARY KEY (user_id, friend_id)
    );
    CREATE TABLE messaging_friend_requests (
        request_id TEXT PRIMARY KEY,
        from_user_id TEXT NOT NULL,
        to_user_id TEXT NOT NULL,
        message TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ({", ".join(f"'{s}'" for s in REQUEST_STATUSES)})),
        created_at TEXT NOT NULL,
        responded_at TEXT
    );
    CREATE TABLE messaging_groups (
        group_id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        owner_id TEXT NOT NULL,
        join_mode TEXT NOT NULL CHECK (join_mode IN ('open', 'invite_only')),
        max_members INTEGER NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE TABLE messaging_group_members (
        group_id TEXT NOT NULL,
        user_id TEXT NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('owner', 'member')),
        joined_at TEXT NOT NULL,
        PRIMARY KEY (group_id, user_id)
    );
    CREATE TABLE messaging_messages (
        message_id TEXT PRIMARY KEY,
        seq INTEGER NOT NULL UNIQUE,
        conversation_id TEXT NOT NULL,
        sender_id TEXT NOT NULL,
        content TEXT NOT NULL,
        sent_at TEXT NOT NULL,
        recalled INTEGER NOT NULL DEFAULT 0,
        recalled_at TEXT
    );
    CREATE INDEX messaging_messages_conversation ON messaging_messages(conversation_id, seq);
    CREATE TABLE messaging_read_marks (
        conversation_id TEXT NOT NULL,
        user_id TEXT NOT NULL,
        last_read_seq INTEGER NOT NULL,
        PRIMARY KEY (conversation_id, user_id)
    );
    """
    volatile: ClassVar[Volatile] = {}

    # ---- seed data ---------------------------------------------------------------------------
    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        now = utc(clock)
        users = []
        for i in range(1, N_USERS + 1):
            first, last = pick_name(rng, FIRST_NAMES, LAST_NAMES)
            users.append(
                {
                    "user_id": f"U{i:04d}",
                    "username": f"{first.lower()}_{last.lower()}{i}",
                    "display_name": f"{first} {last}",
                    "bio": rng.choice(("", "Coffee first.", "Out hiking", "Busy, text me", "Hello!")),
                    "joined_at": iso(now - timedelta(days=rng.randint(30, 1500))),
                }
            )
        insert_rows(db, "messaging_users", users)
        ids = [u["user_id"] for u in users]

        pairs: set[tuple[str, str]] = set()
        for uid in ids:
            for other in rng.sample(ids, rng.randint(2, 6)):
                if other != uid:
                    pairs.add((min(uid, other), max(uid, other)))
        ordered_pairs = sorted(pairs)
        friendships = []
        for a, b in ordered_pairs:
            since = iso(now - timedelta(days=rng.randint(1, 900)))
            friendships += [
                {"user_id": a, "friend_id": b, "since": since},
                {"user_id": b, "friend_id": a, "since": since},
            ]
        insert_rows(db, "messaging_friendships", friendships)

        requests: list[dict[str, Any]] = []
        while len(requests) < 40:
            a, b = rng.sample(ids, 2)
            key = (min(a, b), max(a, b))
            if key in pairs or any({r["from_user_id"], r["to_user_id"]} == {a, b} for r in requests):
                continue
            status = "pending" if len(requests) < 25 else "declined"
            created = now - timedelta(hours=rng.randint(1, 240))
            requests.append(
                {
                    "request_id": format_id("FR", len(requests) + 1),
                    "from_user_id": a,
                    "to_user_id": b,
                    "message": rng.choice(("Hi, it's me from the conference", "Let's connect!", "")),
                    "status": status,
                    "created_at": iso(created),
                    "responded_at": None if status == "pending" else iso(created + timedelta(hours=1)),
                }
            )
        insert_rows(db, "messaging_friend_requests", requests)
        set_counter(db, "FR", len(requests))

        groups, members = [], []
        group_members: dict[str, list[str]] = {}
        for i in range(1, N_GROUPS + 1):
            gid = format_id("GRP", i, 4)
            crowd = rng.sample(ids, rng.randint(3, 18))
            created = now - timedelta(days=rng.randint(20, 600))
            groups.append(
                {
                    "group_id": gid,
                    "name": GROUP_TOPICS[i - 1],
                    "owner_id": crowd[0],
                    "join_mode": rng.choice(JOIN_MODES),
                    "max_members": rng.choice((50, 100, GROUP_LIMIT)),
                    "created_at": iso(created),
                }
            )
            group_members[gid] = crowd
            for k, uid in enumerate(crowd):
                members.append(
                    {
                        "group_id": gid,
                        "user_id": uid,
                        "role": "owner" if k == 0 else "member",
                        "joined_at": iso(created + timedelta(days=k)),
                    }
                )
        insert_rows(db, "messaging_groups", groups)
        set_counter(db, "GRP", len(groups))
        insert_rows(db, "messaging_group_members", members)

        # (conversation, participants): a third of the friend pairs chat, and every group
        chats: list[tuple[str, list[str]]] = [
            (dm_id(a, b), [a, b]) for a, b in ordered_pairs if rng.random() < 0.35
        ]
        chats += list(group_members.items())
        drafts = []
        for _ in range(N_MESSAGES):
            conv, people = rng.choice(chats)
            body = rng.choice(BODIES).format(day=rng.choice(DAYS))
            drafts.append(
                (
                    now - timedelta(minutes=rng.randint(3, 30 * 24 * 60)),
                    conv,
                    rng.choice(people),
                    f"{rng.choice(OPENERS)}, {body}",
                )
            )
        drafts.sort(key=lambda d: (d[0], d[1]))
        messages: list[dict[str, Any]] = []
        last_seq: dict[str, list[int]] = {}
        for seq, (sent, conv, sender, text) in enumerate(drafts, 1):
            messages.append(
                {
                    "message_id": format_id("MSG", seq),
                    "seq": seq,
                    "conversation_id": conv,
                    "sender_id": sender,
                    "content": text,
                    "sent_at": iso(sent),
                    "recalled": 0,
                    "recalled_at": None,
                }
            )
            last_seq.setdefault(conv, []).append(seq)
        insert_rows(db, "messaging_messages", messages)
        set_counter(db, "MSG", len(messages))

        marks = []
        for conv, people in chats:
            seqs = last_seq.get(conv, [])
            for uid in people:
                # most people are nearly caught up: a few recent messages stay unread
                behind = rng.choice((0, 0, 0, 1, 2, 5))
                upto = seqs[-1 - behind] if len(seqs) > behind else 0
                marks.append({"conversation_id": conv, "user_id": uid, "last_read_seq": upto})
        insert_rows(db, "messaging_read_marks", marks)

    # ---- helpers -----------------------------------------------------------------------------
    def _user(self, user_id: str) -> dict[str, Any]:
        return self.get_or_404("messaging_users", "user_id", user_id, what="user")

    def _group(self, group_id: str) -> dict[str, Any]:
        return self.get_or_404("messaging_groups", "group_id", group_id, what="group")

    def _are_friends(self, a: str, b: str) -> bool:
        return (
            self.scalar("SELECT 1 FROM messaging_friendships WHERE user_id = ? AND friend_id = ?", (a, b))
            is not None
        )

    def _is_member(self, group_id: str, user_id: str) -> bool:
        return (
            self.scalar(
                "SELECT 1 FROM messaging_group_members WHERE group_id = ? AND user_id = ?",
                (group_id, user_id),
            )
            is not None
        )

    def _member_count(self, group_id: str) -> int:
        return int(
            self.scalar("SELECT count(*) FROM messaging_group_members WHERE group_id = ?", (group_id,))
        )

    def _check_participant(self, user_id: str, conversation_id: str) -> None:
        """404 for a conversation that does not exist, 403 for one the user is not part of."""
        self._user(user_id)
        if conversation_id.startswith("DM-"):
            parts = conversation_id.split("-")
            if len(parts) != 3 or dm_id(parts[1], parts[2]) != conversation_id:
                raise not_found("conversation", conversation_id)
            for uid in parts[1:]:
                self._user(uid)
            if user_id not in parts[1:]:
                raise AppError(403, f"user {user_id} is not part of conversation {conversation_id}")
            return
        if self.scalar("SELECT 1 FROM messaging_groups WHERE group_id = ?", (conversation_id,)) is None:
            raise not_found("conversation", conversation_id)
        if not self._is_member(conversation_id, user_id):
            raise AppError(403, f"user {user_id} is not a member of group {conversation_id}")

    def _read_mark(self, conversation_id: str, user_id: str) -> int:
        seq = self.scalar(
            "SELECT last_read_seq FROM messaging_read_marks WHERE conversation_id = ? AND user_id = ?",
            (conversation_id, user_id),
        )
        return int(seq or 0)

    def _set_read_mark(self, conversation_id: str, user_id: str, seq: int) -> None:
        self.execute(
            "INSERT INTO messaging_read_marks(conversation_id, user_id, last_read_seq) VALUES(?, ?, ?)"
            " ON CONFLICT(conversation_id, user_id) DO UPDATE SET last_read_seq = excluded.last_read_seq",
            (conversation_id, user_id, seq),
        )

    def _unread(self, conversation_id: str, user_id: str) -> int:
        return int(
            self.scalar(
                "SELECT count(*) FROM messaging_messages WHERE conversation_id = ? AND seq > ?"
                " AND sender_id != ? AND recalled = 0",
                (conversation_id, self._read_mark(conversation_id, user_id), user_id),
            )
        )

    def _conversations(self, user_id: str) -> list[str]:
        dms = [
            r["conversation_id"]
            for r in self.rows(
                "SELECT DISTINCT conversation_id FROM messaging_messages WHERE conversation_id LIKE 'DM-%'"
                " AND (conversation_id LIKE ? OR conversation_id LIKE ?) ORDER BY conversation_id",
                (f"DM-{user_id}-%", f"DM-%-{user_id}"),
            )
        ]
        groups = [
            r["group_id"]
            for r in self.rows(
                "SELECT group_id FROM messaging_group_members WHERE user_id = ? ORDER BY group_id", (user_id,)
            )
        ]
        return dms + groups

    @staticmethod
    def _message_view(m: dict[str, Any]) -> dict[str, Any]:
        return {
            "message_id": m["message_id"],
            "conversation_id": m["conversation_id"],
            "sender_id": m["sender_id"],
            "content": RECALLED_TEXT if m["recalled"] else m["content"],
            "sent_at": m["sent_at"],
            "recalled": bool(m["recalled"]),
        }

    # ---- users and friends -----------------------------------------------------------------------
    @read
    def get_user_profile(self, user_id: Annotated[str, Param("user id, e.g. U0007")]) -> dict[str, Any]:
        """A user's public profile and friend count."""
        u = self._user(user_id)
        friends = self.scalar("SELECT count(*) FROM messaging_friendships WHERE user_id = ?", (user_id,))
        return ok(user={**u, "friend_count": int(friends)})

    @read
    def search_users(
        self, keyword: Annotated[str, Param("part of a username or display name")]
    ) -> dict[str, Any]:
        """Find users by username or display name (case-insensitive), at most 20."""
        if not keyword.strip():
            raise bad_request("keyword must not be empty")
        rows = self.rows(
            "SELECT user_id, username, display_name FROM messaging_users"
            " WHERE instr(lower(username), ?) > 0 OR instr(lower(display_name), ?) > 0"
            " ORDER BY user_id LIMIT 20",
            (keyword.strip().lower(), keyword.strip().lower()),
        )
        return ok(users=rows)

    @read
    def list_friends(self, user_id: Annotated[str, Param("user id")]) -> dict[str, Any]:
        """The user's friends, by display name."""
        self._user(user_id)
        rows = self.rows(
            "SELECT u.user_id, u.username, u.display_name, f.since FROM messaging_friendships f"
            " JOIN messaging_users u ON u.user_id = f.friend_id WHERE f.user_id = ?"
            " ORDER BY u.display_name, u.user_id",
            (user_id,),
        )
        return ok(user_id=user_id, total=len(rows), friends=rows)

    @write
    def send_friend_request(
        self,
        from_user_id: Annotated[str, Param("who sends the request")],
        to_user_id: Annotated[str, Param("who should accept it")],
        message: Annotated[str, Param("a short greeting")] = "",
    ) -> dict[str, Any]:
        """Ask another user to become friends; they must accept it."""
        if from_user_id == to_user_id:
            raise bad_request("cannot send a friend request to yourself")
        self._user(from_user_id)
        self._user(to_user_id)
        if self._are_friends(from_user_id, to_user_id):
            raise conflict(f"{from_user_id} and {to_user_id} are already friends")
        pending = self.scalar(
            "SELECT request_id FROM messaging_friend_requests WHERE status = 'pending'"
            " AND ((from_user_id = ? AND to_user_id = ?) OR (from_user_id = ? AND to_user_id = ?))",
            (from_user_id, to_user_id, to_user_id, from_user_id),
        )
        if pending is not None:
            raise conflict(f"a friend request between them is already pending: {pending}", request_id=pending)
        request_id = self.next_id("FR")
        self.execute(
            "INSERT INTO messaging_friend_requests VALUES (?, ?, ?, ?, 'pending', ?, NULL)",
            (request_id, from_user_id, to_user_id, message, iso(app_now(self))),
        )
        return ok(request_id=request_id, request_status="pending")

    @read
    def list_friend_requests(
        self,
        user_id: Annotated[str, Param("user id")],
        direction: Annotated[str, Param("requests received or sent", enum=DIRECTIONS)] = "incoming",
        status: Annotated[str | None, Param("only this status", enum=REQUEST_STATUSES)] = "pending",
    ) -> dict[str, Any]:
        """Friend requests the user received (or sent), newest first."""
        self._user(user_id)
        column = "to_user_id" if direction == "incoming" else "from_user_id"
        query = Query(f"SELECT * FROM messaging_friend_requests WHERE {column} = ?", user_id)
        if status is not None:
            query.where("status = ?", status)
        return ok(requests=query.rows(self, "created_at DESC, request_id DESC"))

    @write
    def respond_to_friend_request(
        self,
        request_id: Annotated[str, Param("friend request id, e.g. FR-000003")],
        user_id: Annotated[str, Param("the recipient of the request")],
        action: Annotated[str, Param("accept or decline", enum=RESPONSES)],
    ) -> dict[str, Any]:
        """Accept or decline a pending friend request; accepting makes both users friends."""
        req = self.get_or_404("messaging_friend_requests", "request_id", request_id, what="friend request")
        self._user(user_id)
        if req["to_user_id"] != user_id:
            raise AppError(403, f"only {req['to_user_id']} can answer friend request {request_id}")
        if req["status"] != "pending":
            raise conflict(f"friend request {request_id} is already {req['status']}")
        now = iso(app_now(self))
        status = "accepted" if action == "accept" else "declined"
        self.execute(
            "UPDATE messaging_friend_requests SET status = ?, responded_at = ? WHERE request_id = ?",
            (status, now, request_id),
        )
        if status == "accepted" and not self._are_friends(req["from_user_id"], user_id):
            self.execute(
                "INSERT INTO messaging_friendships VALUES (?, ?, ?), (?, ?, ?)",
                (user_id, req["from_user_id"], now, req["from_user_id"], user_id, now),
            )
        return ok(request_id=request_id, request_status=status)

    @write
    def delete_friend(
        self,
        user_id: Annotated[str, Param("user id")],
        friend_id: Annotated[str, Param("the friend to remove")],
    ) -> dict[str, Any]:
        """Remove a friend (for both sides); the chat history stays."""
        self._user(user_id)
        self._user(friend_id)
        if not self._are_friends(user_id, friend_id):
            raise not_found("friend", friend_id)
        self.execute(
            "DELETE FROM messaging_friendships"
            " WHERE (user_id = ? AND friend_id = ?) OR (user_id = ? AND friend_id = ?)",
            (user_id, friend_id, friend_id, user_id),
        )
        return ok(user_id=user_id, removed_friend_id=friend_id)

    # ---- groups ------------------------------------------------------------------------------------
    @write
    def create_group(
        self,
        owner_id: Annotated[str, Param("the user creating the group")],
        name: Annotated[str, Param("group name")],
        member_ids: Annotated[list[str], Param("friends of the owner to add, at least 2")],
        join_mode: Annotated[
            str, Param("open: anyone may join; invite_only", enum=JOIN_MODES)
        ] = "invite_only",
    ) -> dict[str, Any]:
        """Create a group chat with the owner and some of the owner's friends."""
        self._user(owner_id)
        if not name.strip():
            raise bad_request("name must not be empty")
        invited = list(dict.fromkeys(m for m in member_ids if m != owner_id))
        if len(invited) < 2:
            raise unprocessable("a group needs the owner and at least 2 other members")
        for uid in invited:
            self._user(uid)
        strangers = [uid for uid in invited if not self._are_friends(owner_id, uid)]
        if strangers:
            raise AppError(403, f"only friends can be added to a group; not friends: {strangers}")
        group_id, now = self.next_id("GRP", 4), iso(app_now(self))
        self.execute(
            "INSERT INTO messaging_groups VALUES (?, ?, ?, ?, ?, ?)",
            (group_id, name.strip(), owner_id, join_mode, GROUP_LIMIT, now),
        )
        for uid in [owner_id, *invited]:
            self.execute(
                "INSERT INTO messaging_group_members VALUES (?, ?, ?, ?)",
                (group_id, uid, "owner" if uid == owner_id else "member", now),
            )
        return ok(group_id=group_id, member_count=len(invited) + 1)

    def _add_member(self, g: dict[str, Any], user_id: str) -> dict[str, Any]:
        """Add `user_id` to group `g` as a member, unless the group is full."""
        group_id = g["group_id"]
        if self._member_count(group_id) >= g["max_members"]:
            raise unprocessable(f"group {group_id} is full ({g['max_members']} members)")
        self.execute(
            "INSERT INTO messaging_group_members VALUES (?, ?, 'member', ?)",
            (group_id, user_id, iso(app_now(self))),
        )
        return ok(group_id=group_id, user_id=user_id, member_count=self._member_count(group_id))

    @write
    def join_group(
        self,
        user_id: Annotated[str, Param("user id")],
        group_id: Annotated[str, Param("group id, e.g. GRP-0004")],
    ) -> dict[str, Any]:
        """Join an open group."""
        self._user(user_id)
        g = self._group(group_id)
        if self._is_member(group_id, user_id):
            raise conflict(f"{user_id} is already a member of {group_id}")
        if g["join_mode"] != "open":
            raise AppError(403, f"group {group_id} is invite-only; ask a member to invite you")
        return self._add_member(g, user_id)

    @write
    def invite_to_group(
        self,
        inviter_id: Annotated[str, Param("a member of the group")],
        group_id: Annotated[str, Param("group id")],
        user_id: Annotated[str, Param("a friend of the inviter to add")],
    ) -> dict[str, Any]:
        """Add a friend to a group the inviter belongs to."""
        self._user(inviter_id)
        self._user(user_id)
        g = self._group(group_id)
        if not self._is_member(group_id, inviter_id):
            raise AppError(403, f"{inviter_id} is not a member of {group_id}")
        if not self._are_friends(inviter_id, user_id):
            raise AppError(403, f"{user_id} is not a friend of {inviter_id}")
        if self._is_member(group_id, user_id):
            raise conflict(f"{user_id} is already a member of {group_id}")
        return self._add_member(g, user_id)

    @write
    def leave_group(
        self,
        user_id: Annotated[str, Param("user id")],
        group_id: Annotated[str, Param("group id")],
    ) -> dict[str, Any]:
        """Leave a group. The owner cannot leave their own group."""
        self._user(user_id)
        g = self._group(group_id)
        if not self._is_member(group_id, user_id):
            raise conflict(f"{user_id} is not a member of {group_id}")
        if g["owner_id"] == user_id:
            raise conflict(f"{user_id} owns {group_id} and cannot leave it")
        self.execute(
            "DELETE FROM messaging_group_members WHERE group_id = ? AND user_id = ?", (group_id, user_id)
        )
        self.execute(
            "DELETE FROM messaging_read_marks WHERE conversation_id = ? AND user_id = ?", (group_id, user_id)
        )
        return ok(group_id=group_id, user_id=user_id, member_count=self._member_count(group_id))

    @read
    def list_group_members(self, group_id: Annotated[str, Param("group id")]) -> dict[str, Any]:
        """A group's details and members (owner first)."""
        g = self._group(group_id)
        rows = self.rows(
            "SELECT m.user_id, u.display_name, m.role, m.joined_at FROM messaging_group_members m"
            " JOIN messaging_users u USING (user_id) WHERE m.group_id = ?"
            " ORDER BY m.role = 'owner' DESC, m.joined_at, m.user_id",
            (group_id,),
        )
        return ok(group=g, member_count=len(rows), members=rows)

    @read
    def list_my_groups(self, user_id: Annotated[str, Param("user id")]) -> dict[str, Any]:
        """The groups a user belongs to."""
        self._user(user_id)
        rows = self.rows(
            "SELECT g.group_id, g.name, m.role, (SELECT count(*) FROM messaging_group_members x"
            " WHERE x.group_id = g.group_id) AS member_count FROM messaging_group_members m"
            " JOIN messaging_groups g USING (group_id) WHERE m.user_id = ? ORDER BY g.name, g.group_id",
            (user_id,),
        )
        return ok(user_id=user_id, groups=rows)

    # ---- messages ------------------------------------------------------------------------------------
    @write
    def send_message(
        self,
        sender_id: Annotated[str, Param("who sends it")],
        content: Annotated[str, Param("message text, up to 2000 characters")],
        to_user_id: Annotated[str | None, Param("a friend to message directly")] = None,
        group_id: Annotated[str | None, Param("a group to post in (instead of to_user_id)")] = None,
    ) -> dict[str, Any]:
        """Send a message to a friend or to a group the sender belongs to."""
        self._user(sender_id)
        if (to_user_id is None) == (group_id is None):
            raise bad_request("give exactly one of to_user_id and group_id")
        if not content.strip():
            raise bad_request("content must not be empty")
        if len(content) > MAX_MESSAGE_CHARS:
            raise bad_request(f"content is longer than {MAX_MESSAGE_CHARS} characters")
        if to_user_id is not None:
            self._user(to_user_id)
            if to_user_id == sender_id:
                raise bad_request("cannot message yourself")
            if not self._are_friends(sender_id, to_user_id):
                raise AppError(403, f"{sender_id} and {to_user_id} are not friends")
            conversation_id = dm_id(sender_id, to_user_id)
        else:
            assert group_id is not None
            self._group(group_id)
            if not self._is_member(group_id, sender_id):
                raise AppError(403, f"{sender_id} is not a member of {group_id}")
            conversation_id = group_id
        message_id = self.next_id("MSG")
        seq = int(message_id.split("-")[1])
        sent_at = iso(app_now(self))
        self.execute(
            "INSERT INTO messaging_messages VALUES (?, ?, ?, ?, ?, ?, 0, NULL)",
            (message_id, seq, conversation_id, sender_id, content, sent_at),
        )
        self._set_read_mark(conversation_id, sender_id, seq)  # you have read what you wrote
        return ok(message_id=message_id, conversation_id=conversation_id, sent_at=sent_at)

    @read
    def list_conversations(self, user_id: Annotated[str, Param("user id")]) -> dict[str, Any]:
        """The user's chats, most recent activity first, with the last message and unread count."""
        self._user(user_id)
        out = []
        for conv in self._conversations(user_id):
            last = self.row(
                "SELECT * FROM messaging_messages WHERE conversation_id = ? ORDER BY seq DESC LIMIT 1",
                (conv,),
            )
            if conv.startswith("DM-"):
                other = next(p for p in conv.split("-")[1:] if p != user_id)
                title = self.scalar("SELECT display_name FROM messaging_users WHERE user_id = ?", (other,))
                kind = "direct"
            else:
                title = self.scalar("SELECT name FROM messaging_groups WHERE group_id = ?", (conv,))
                kind = "group"
            out.append(
                {
                    "conversation_id": conv,
                    "type": kind,
                    "title": title,
                    "last_message": None if last is None else self._message_view(last),
                    "unread_count": self._unread(conv, user_id),
                }
            )
        out.sort(
            key=lambda c: ((c["last_message"] or {}).get("sent_at") or "", c["conversation_id"]), reverse=True
        )
        return ok(user_id=user_id, conversations=out)

    @read
    def get_messages(
        self,
        user_id: Annotated[str, Param("the reader; must be part of the conversation")],
        conversation_id: Annotated[str, Param("DM-<user>-<user> or a group id")],
        page: Annotated[int, Param("1-based page, newest messages on page 1")] = 1,
        page_size: Annotated[int, Param("messages per page, 1-50")] = 20,
    ) -> dict[str, Any]:
        """Messages of a conversation, newest first, one page at a time. Does not mark them read."""
        self._check_participant(user_id, conversation_id)
        rows = self.rows(
            "SELECT * FROM messaging_messages WHERE conversation_id = ? ORDER BY seq DESC", (conversation_id,)
        )
        page_rows = paginate(rows, page, page_size, max_page_size=50)
        return ok(
            conversation_id=conversation_id,
            total=len(rows),
            page=page,
            has_more=page * page_size < len(rows),
            messages=[self._message_view(m) for m in page_rows],
        )

    @write
    def recall_message(
        self,
        user_id: Annotated[str, Param("the sender of the message")],
        message_id: Annotated[str, Param("message id, e.g. MSG-002001")],
    ) -> dict[str, Any]:
        """Recall (unsend) your own message; only within 2 minutes of sending it."""
        self._user(user_id)
        m = self.get_or_404("messaging_messages", "message_id", message_id, what="message")
        if m["sender_id"] != user_id:
            raise AppError(403, f"only the sender {m['sender_id']} can recall {message_id}")
        if m["recalled"]:
            raise conflict(f"message {message_id} is already recalled")
        now = app_now(self)
        if now - datetime.fromisoformat(m["sent_at"]) > RECALL_WINDOW:
            raise conflict(
                f"message {message_id} was sent at {m['sent_at']}; messages can only be recalled"
                " within 2 minutes"
            )
        self.execute(
            "UPDATE messaging_messages SET recalled = 1, recalled_at = ? WHERE message_id = ?",
            (iso(now), message_id),
        )
        return ok(message_id=message_id, recalled=True)

    @write
    def mark_conversation_read(
        self,
        user_id: Annotated[str, Param("user id")],
        conversation_id: Annotated[str, Param("conversation id")],
    ) -> dict[str, Any]:
        """Mark every message of a conversation as read for the user."""
        self._check_participant(user_id, conversation_id)
        last = self.scalar(
            "SELECT max(seq) FROM messaging_messages WHERE conversation_id = ?", (conversation_id,)
        )
        self._set_read_mark(conversation_id, user_id, int(last or 0))
        return ok(conversation_id=conversation_id, unread_count=0)

    @write
    def mark_conversation_unread(
        self,
        user_id: Annotated[str, Param("user id")],
        conversation_id: Annotated[str, Param("conversation id")],
    ) -> dict[str, Any]:
        """Mark the latest message from someone else as unread again (a reminder to answer)."""
        self._check_participant(user_id, conversation_id)
        latest = self.scalar(
            "SELECT max(seq) FROM messaging_messages WHERE conversation_id = ? AND sender_id != ?"
            " AND recalled = 0",
            (conversation_id, user_id),
        )
        if latest is None:
            raise unprocessable(f"{conversation_id} has no message from anyone else to mark unread")
        mark = min(self._read_mark(conversation_id, user_id), int(latest) - 1)
        self._set_read_mark(conversation_id, user_id, mark)
        return ok(conversation_id=conversation_id, unread_count=self._unread(conversation_id, user_id))

    @read
    def get_unread_counts(self, user_id: Annotated[str, Param("user id")]) -> dict[str, Any]:
        """Unread messages per conversation (only those with any) and in total."""
        self._user(user_id)
        counts = {conv: self._unread(conv, user_id) for conv in self._conversations(user_id)}
        nonzero = [{"conversation_id": c, "unread_count": n} for c, n in sorted(counts.items()) if n]
        return ok(user_id=user_id, total_unread=sum(counts.values()), conversations=nonzero)
