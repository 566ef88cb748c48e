"""T-Eval FileOperation: a small virtual disk of text files under /home/user.

Semantics: paths are POSIX; a relative path is taken from the working directory /home/user and
`..` is resolved. write_file creates or overwrites a file but, like open(path, "w"), needs the
parent directory to exist (404) and cannot write over a directory (409). read_file returns the
text or a 404; reading a directory is a 409. Seeded: notes, reports, CSV data, project files.
"""

from __future__ import annotations

import posixpath
import random
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import Volatile, read, write
from toolgym.mocks.apps.teval.common import TevalApp
from toolgym.mocks.clock import format_time
from toolgym.mocks.responses import AppError, bad_request, conflict, not_found, ok
from toolgym.mocks.seeding import insert_rows
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

HOME: Final = "/home/user"
MAX_BYTES: Final = 1_000_000
DIRS: Final = (
    "/",
    "/home",
    HOME,
    f"{HOME}/documents",
    f"{HOME}/documents/reports",
    f"{HOME}/documents/meetings",
    f"{HOME}/notes",
    f"{HOME}/data",
    f"{HOME}/projects",
    f"{HOME}/projects/website",
    f"{HOME}/projects/analytics",
    f"{HOME}/downloads",
    f"{HOME}/desktop",
    "/tmp",
)
PEOPLE: Final = ("Alice", "Bob", "Chen Wei", "Dmitri", "Esther", "Farid", "Grace", "Hiro", "Ines", "Jamal")
TOPICS: Final = (
    "budget review",
    "product roadmap",
    "hiring plan",
    "quarterly targets",
    "launch checklist",
    "customer feedback",
    "security audit",
    "office move",
    "marketing campaign",
    "vendor contracts",
)
ACTIONS: Final = (
    "send the updated figures",
    "book a follow-up meeting",
    "draft the announcement",
    "review the contract",
    "collect team feedback",
    "update the dashboard",
    "prepare the slides",
    "call the supplier",
)
PRODUCTS: Final = ("notebook", "backpack", "desk lamp", "water bottle", "headphones", "keyboard", "mug")
REGIONS: Final = ("north", "south", "east", "west")
CHORES: Final = ("buy groceries", "pay rent", "renew passport", "call mom", "fix bike", "water plants")


def _meeting_note(rng: random.Random, day: str, topic: str) -> str:
    who = rng.sample(PEOPLE, 3)
    todo = rng.sample(ACTIONS, 2)
    return (
        f"Meeting notes - {topic}\nDate: {day}\nAttendees: {', '.join(who)}\n\n"
        f"Discussion:\n- status of the {topic}\n- open questions from {who[1]}\n\n"
        f"Action items:\n- {who[0]}: {todo[0]}\n- {who[2]}: {todo[1]}\n"
    )


def _sales_csv(rng: random.Random, month: str) -> str:
    lines = ["date,region,product,units,unit_price"]
    for day in range(1, 29, 3):
        product = rng.choice(PRODUCTS)
        lines.append(
            f"{month}-{day:02d},{rng.choice(REGIONS)},{product},{rng.randint(1, 40)},"
            f"{rng.randint(5, 120)}.{rng.choice(('00', '50', '99'))}"
        )
    return "\n".join(lines) + "\n"


class FileOperation(TevalApp):
    name = "teval_file"
    teval_tool: ClassVar[str] = "FileOperation"
    description = "Plugin for operating files"
    schema = """
    CREATE TABLE teval_file_dirs (path TEXT PRIMARY KEY);
    CREATE TABLE teval_file_files (
        path TEXT PRIMARY KEY,
        dir TEXT NOT NULL,
        text TEXT NOT NULL,
        size INTEGER NOT NULL,
        modified_at TEXT NOT NULL
    );
    """
    volatile: ClassVar[Volatile] = {"teval_file_files": ["modified_at"]}

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        insert_rows(db, "teval_file_dirs", [{"path": d} for d in DIRS])
        files: dict[str, str] = {}
        for i in range(40):
            day = (clock - timedelta(days=3 * i + rng.randint(1, 2))).date().isoformat()
            topic = rng.choice(TOPICS)
            files[f"{HOME}/documents/meetings/{day}-{topic.replace(' ', '-')}.txt"] = _meeting_note(
                rng, day, topic
            )
        for months_back in range(1, 13):
            year, month = clock.year, clock.month - months_back
            while month < 1:
                year, month = year - 1, month + 12
            stamp = f"{year}-{month:02d}"
            files[f"{HOME}/data/sales_{stamp}.csv"] = _sales_csv(rng, stamp)
            units = rng.randint(300, 900)
            files[f"{HOME}/documents/reports/report_{stamp}.md"] = (
                f"# Monthly report {stamp}\n\nUnits sold: {units}\nBest region: {rng.choice(REGIONS)}\n"
                f"Top product: {rng.choice(PRODUCTS)}\nNext focus: {rng.choice(TOPICS)}\n"
            )
        for i in range(1, 31):
            items = rng.sample(CHORES, 3)
            files[f"{HOME}/notes/note_{i:02d}.txt"] = "TODO\n" + "".join(f"- [ ] {t}\n" for t in items)
        files[f"{HOME}/projects/website/README.md"] = (
            "# Website\n\nStatic site for the team. Build with `make site`, deploy from main.\n"
        )
        files[f"{HOME}/projects/website/index.html"] = (
            "<html><head><title>Team site</title></head><body><h1>Welcome</h1></body></html>\n"
        )
        files[f"{HOME}/projects/analytics/README.md"] = (
            "# Analytics\n\nNotebooks and scripts for the monthly sales reports in ~/data.\n"
        )
        files[f"{HOME}/projects/analytics/config.ini"] = (
            f"[report]\ncurrency = USD\nregions = {','.join(REGIONS)}\n"
        )
        files[f"{HOME}/desktop/todo.txt"] = "".join(f"- {a}\n" for a in rng.sample(ACTIONS, 4))
        files[f"{HOME}/downloads/invoice_{clock.year - 1}-12.txt"] = (
            f"INVOICE {rng.randint(1000, 9999)}\nAmount due: ${rng.randint(50, 900)}.00\n"
        )
        stamp = format_time(clock - timedelta(days=1))
        insert_rows(
            db,
            "teval_file_files",
            [
                {
                    "path": p,
                    "dir": posixpath.dirname(p),
                    "text": t,
                    "size": len(t.encode()),
                    "modified_at": stamp,
                }
                for p, t in files.items()
            ],
        )

    # ---- helpers --------------------------------------------------------------------------------
    @staticmethod
    def resolve(file_path: str) -> str:
        """The absolute, normalised path; 400 for an empty path or one ending in a slash."""
        raw = file_path.strip()
        if not raw or "\x00" in raw:
            raise bad_request("file_path must be a non-empty path")
        if raw.endswith("/"):
            raise bad_request(f"file_path {file_path!r} names a directory, not a file")
        if raw.startswith("~"):
            raw = HOME + raw[1:]
        absolute = raw if raw.startswith("/") else posixpath.join(HOME, raw)
        return posixpath.normpath(absolute)

    def _is_dir(self, path: str) -> bool:
        return self.row("SELECT path FROM teval_file_dirs WHERE path = ?", (path,)) is not None

    def file_exists(self, path: str) -> bool:
        return self.row("SELECT path FROM teval_file_files WHERE path = ?", (path,)) is not None

    # ---- APIs -----------------------------------------------------------------------------------
    @write
    def write_file(
        self,
        file_path: Annotated[str, Param("The path of the file.")],
        text: Annotated[str, Param("The text needed to write.")],
    ) -> dict[str, Any]:
        """write file to disk (creates the file or replaces its content)"""
        path = self.resolve(file_path)
        if self._is_dir(path):
            raise conflict(f"{path} is a directory")
        parent = posixpath.dirname(path)
        if not self._is_dir(parent):
            raise AppError(404, f"no such directory: {parent}")
        size = len(text.encode())
        if size > MAX_BYTES:
            raise bad_request(f"text is {size} bytes; the limit is {MAX_BYTES}")
        self.execute(
            "INSERT INTO teval_file_files(path, dir, text, size, modified_at) VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT(path) DO UPDATE SET text = excluded.text, size = excluded.size,"
            " modified_at = excluded.modified_at",
            (path, parent, text, size, self.now_iso()),
        )
        return {"status": "success"}

    @read
    def read_file(self, file_path: Annotated[str, Param("The path of the file.")]) -> dict[str, Any]:
        """read file from disk"""
        path = self.resolve(file_path)
        if self._is_dir(path):
            raise conflict(f"{path} is a directory")
        found = self.row("SELECT text FROM teval_file_files WHERE path = ?", (path,))
        if found is None:
            raise not_found("file", path)
        return ok(text=found["text"])
