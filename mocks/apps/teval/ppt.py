"""T-Eval PPT: build a presentation page by page, then save it.

Semantics: one presentation is open at a time. create_file opens a new one with a known theme
(400 otherwise) at an absolute `.pptx` location (400), and is a 409 while another is still open.
Pages are added to the open presentation (409 when none is); bullet items are split on [SPAN];
an image page needs an image from the library (get_image's paths) or, when FileOperation shares
the world, a file on its disk (404 otherwise). save_file stores the open presentation at its
location, replacing an earlier one saved there, and needs at least one page (422). get_image
returns the library image whose keywords best match the query words (404 when none match).
Seeded: themes, ~240 library images and ~25 presentations saved earlier.
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import Volatile, read, set_counter, write
from toolgym.mocks.apps.teval.common import TevalApp
from toolgym.mocks.apps.teval.file_operation import FileOperation
from toolgym.mocks.clock import format_time
from toolgym.mocks.responses import AppError, bad_request, conflict, not_found, unprocessable
from toolgym.mocks.seeding import insert_rows
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

THEMES: Final = (
    ("Default", "white background, black titles"),
    ("Light", "pale grey background, blue accents"),
    ("Dark", "dark background, light text"),
    ("Business", "navy title bars, serif headings"),
    ("Education", "chalkboard green, handwritten headings"),
    ("Minimal", "plenty of white space, thin sans-serif text"),
    ("Vibrant", "bold gradients, large headings"),
    ("Nature", "earth tones, leaf motifs"),
)
# subject: extra keywords
SUBJECTS: Final = {
    "cat": "pet animal kitten",
    "dog": "pet animal puppy",
    "mountain": "landscape nature hiking peak",
    "beach": "sea ocean summer holiday",
    "city skyline": "city urban buildings night",
    "forest": "trees nature green",
    "sunset": "sky evening landscape",
    "robot": "technology ai machine",
    "computer": "technology laptop office",
    "chart": "data graph statistics growth",
    "team meeting": "business office people teamwork",
    "classroom": "education school students teacher",
    "rocket": "space launch science",
    "planet": "space astronomy earth",
    "flower": "nature spring garden",
    "coffee": "drink cafe morning",
    "food": "meal restaurant cooking",
    "car": "vehicle transport road",
    "bicycle": "bike transport sport",
    "airplane": "travel flight transport",
    "book": "reading library education",
    "globe": "world map travel geography",
    "money": "finance coins cash economy",
    "handshake": "business deal partnership",
    "laboratory": "science research experiment",
    "dna": "biology genetics science",
    "brain": "neuroscience mind ai",
    "solar panel": "energy renewable sustainability",
    "wind turbine": "energy renewable sustainability",
    "hospital": "health medicine doctor",
    "stock market": "finance trading economy chart",
    "smartphone": "technology mobile phone",
    "football": "sport soccer ball",
    "music": "concert guitar instruments",
    "teamwork": "people collaboration business",
    "cloud computing": "technology server data",
    "security": "lock cyber privacy",
    "calendar": "schedule planning time",
    "lightbulb": "idea innovation creativity",
    "trophy": "award success winner",
}
STYLES: Final = ("photo", "illustration", "icon", "diagram", "watercolor", "3d render")
PAST_TOPICS: Final = (
    "Quarterly Review",
    "Product Launch",
    "Team Onboarding",
    "Research Update",
    "Sales Kickoff",
    "Budget Plan",
    "Marketing Strategy",
    "Project Retrospective",
    "Science Fair",
    "Travel Tips",
)


class PPT(TevalApp):
    name = "teval_ppt"
    teval_tool: ClassVar[str] = "PPT"
    description = "create ppt slides with text, paragraph, images, with good looking styles"
    schema = """
    CREATE TABLE teval_ppt_themes (theme TEXT PRIMARY KEY, look TEXT NOT NULL);
    CREATE TABLE teval_ppt_images (path TEXT PRIMARY KEY, keywords TEXT NOT NULL);
    CREATE TABLE teval_ppt_presentations (
        pres_id TEXT PRIMARY KEY,
        theme TEXT NOT NULL,
        abs_location TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('open', 'saved')),
        created_at TEXT NOT NULL,
        saved_at TEXT
    );
    CREATE UNIQUE INDEX teval_ppt_one_open ON teval_ppt_presentations(state) WHERE state = 'open';
    CREATE TABLE teval_ppt_slides (
        pres_id TEXT NOT NULL,
        page_no INTEGER NOT NULL,
        layout TEXT NOT NULL,
        title TEXT NOT NULL,
        bullet_items TEXT NOT NULL,
        image TEXT,
        PRIMARY KEY (pres_id, page_no)
    );
    """
    volatile: ClassVar[Volatile] = {"teval_ppt_presentations": ["created_at", "saved_at"]}

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        insert_rows(db, "teval_ppt_themes", [{"theme": t, "look": look} for t, look in THEMES])
        images = []
        for subject, extra in SUBJECTS.items():
            for style in rng.sample(STYLES, 6):
                slug = subject.replace(" ", "_")
                images.append(
                    {
                        "path": f"/images/library/{slug}_{style.replace(' ', '')}.png",
                        "keywords": f"{subject} {extra} {style}",
                    }
                )
        insert_rows(db, "teval_ppt_images", images)
        presentations, slides = [], []
        for i in range(1, 26):
            topic = rng.choice(PAST_TOPICS)
            created = clock - timedelta(days=rng.randint(2, 300), minutes=rng.randint(0, 600))
            pres_id = f"PPT-{i:06d}"
            presentations.append(
                {
                    "pres_id": pres_id,
                    "theme": rng.choice(THEMES)[0],
                    "abs_location": f"/home/user/documents/{topic.lower().replace(' ', '_')}_{i}.pptx",
                    "state": "saved",
                    "created_at": format_time(created),
                    "saved_at": format_time(created + timedelta(minutes=rng.randint(10, 90))),
                }
            )
            for page in range(1, rng.randint(3, 8) + 1):
                with_image = rng.random() < 0.3
                slides.append(
                    {
                        "pres_id": pres_id,
                        "page_no": page,
                        "layout": "text_image" if with_image else "text",
                        "title": topic if page == 1 else f"{topic}: part {page - 1}",
                        "bullet_items": json.dumps([f"Point {k}" for k in range(1, rng.randint(2, 5))]),
                        "image": rng.choice(images)["path"] if with_image else None,
                    }
                )
        insert_rows(db, "teval_ppt_presentations", presentations)
        insert_rows(db, "teval_ppt_slides", slides)
        set_counter(db, "PPT", len(presentations))

    # ---- helpers --------------------------------------------------------------------------------
    def _open(self) -> dict[str, Any]:
        found = self.row("SELECT * FROM teval_ppt_presentations WHERE state = 'open'")
        if found is None:
            raise conflict("no presentation is open; call create_file first")
        return found

    def _add_page(self, title: str, bullet_items: str, image: str | None) -> dict[str, Any]:
        pres = self._open()
        items = [b.strip() for b in bullet_items.split("[SPAN]") if b.strip()]
        if not title.strip() and not items:
            raise bad_request("a page needs a title or at least one bullet item")
        page = int(
            self.scalar(
                "SELECT coalesce(max(page_no), 0) + 1 FROM teval_ppt_slides WHERE pres_id = ?",
                (pres["pres_id"],),
            )
        )
        self.execute(
            "INSERT INTO teval_ppt_slides(pres_id, page_no, layout, title, bullet_items, image) VALUES (?, ?, ?, ?, ?, ?)",
            (
                pres["pres_id"],
                page,
                "text" if image is None else "text_image",
                title.strip(),
                json.dumps(items, ensure_ascii=False),
                image,
            ),
        )
        return {"status": "success"}

    def _image_exists(self, path: str) -> str:
        if self.row("SELECT path FROM teval_ppt_images WHERE path = ?", (path,)) is not None:
            return path
        has_disk = self.row(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'teval_file_files'"
        )
        if has_disk is not None and path.strip():
            resolved = FileOperation.resolve(path)
            if self.row("SELECT path FROM teval_file_files WHERE path = ?", (resolved,)) is not None:
                return resolved
        raise not_found("image", path)

    # ---- APIs -----------------------------------------------------------------------------------
    @write
    def create_file(
        self,
        theme: Annotated[str, Param("the theme used: " + ", ".join(t for t, _ in THEMES))],
        abs_location: Annotated[str, Param("the ppt file's absolute saving location")],
    ) -> dict[str, Any]:
        """Create a pptx file with specific themes"""
        known = {t.lower(): t for t, _ in THEMES}
        chosen = known.get(theme.strip().lower())
        if chosen is None:
            raise bad_request(f"unknown theme {theme!r}; expected one of {[t for t, _ in THEMES]}")
        location = abs_location.strip()
        if not location.startswith("/") or not location.lower().endswith(".pptx"):
            raise bad_request(f"abs_location must be an absolute path ending in .pptx, got {abs_location!r}")
        current = self.row("SELECT abs_location FROM teval_ppt_presentations WHERE state = 'open'")
        if current is not None:
            raise conflict(f"{current['abs_location']} is still open; save it with save_file first")
        self.execute(
            "INSERT INTO teval_ppt_presentations(pres_id, theme, abs_location, state, created_at)"
            " VALUES (?, ?, ?, 'open', ?)",
            (self.next_id("PPT"), chosen, location, self.now_iso()),
        )
        return {"status": "success"}

    @read
    def get_image(
        self, keywords: Annotated[str, Param("the comma separated keywords to describe the image")]
    ) -> dict[str, Any]:
        """Get an image given keywords from Internet, return the image path"""
        wanted = [w for w in keywords.lower().replace(",", " ").split() if w]
        if not wanted:
            raise bad_request("keywords must not be empty")
        best: tuple[int, str] | None = None
        for img in self.rows("SELECT path, keywords FROM teval_ppt_images ORDER BY path"):
            have = set(img["keywords"].split())
            score = sum(1 for w in wanted if w in have or w.rstrip("s") in have)
            if score and (best is None or score > best[0]):
                best = (score, img["path"])
        if best is None:
            raise AppError(404, f"no image matches {keywords!r}")
        return {"status": "success", "picture_url": best[1]}

    @write
    def add_text_page(
        self,
        title: Annotated[str, Param("the title of the page")],
        bullet_items: Annotated[
            str,
            Param(
                "bullet_items should be string, for multiple bullet items, please use [SPAN] to separate them."
            ),
        ],
    ) -> dict[str, Any]:
        """Add text page of ppt"""
        return self._add_page(title, bullet_items, None)

    @write
    def add_text_image_page(
        self,
        title: Annotated[str, Param("the title of the page")],
        bullet_items: Annotated[
            str,
            Param(
                "bullet_items should be string, for multiple bullet items, please use [SPAN] to separate them."
            ),
        ],
        image: Annotated[str, Param("the path of the image")],
    ) -> dict[str, Any]:
        """Add a text page with one image. Image should be a path"""
        return self._add_page(title, bullet_items, self._image_exists(image.strip()))

    @write
    def save_file(self) -> dict[str, Any]:
        """When all steps done, YOU MUST use save_file() to save PPT"""
        pres = self._open()
        pages = int(
            self.scalar("SELECT count(*) FROM teval_ppt_slides WHERE pres_id = ?", (pres["pres_id"],))
        )
        if pages == 0:
            raise unprocessable("the presentation has no pages; add a page before saving")
        # saving over an earlier file replaces it
        for old in self.rows(
            "SELECT pres_id FROM teval_ppt_presentations WHERE abs_location = ? AND state = 'saved'",
            (pres["abs_location"],),
        ):
            self.execute("DELETE FROM teval_ppt_slides WHERE pres_id = ?", (old["pres_id"],))
            self.execute("DELETE FROM teval_ppt_presentations WHERE pres_id = ?", (old["pres_id"],))
        self.execute(
            "UPDATE teval_ppt_presentations SET state = 'saved', saved_at = ? WHERE pres_id = ?",
            (self.now_iso(), pres["pres_id"]),
        )
        return {"status": "success"}
