"""PantryApp: a kitchen pantry on toolgym's mock-app template. Stock is kept in grams; using more
than is left is refused and changes nothing."""

from __future__ import annotations

import random
from datetime import datetime
from typing import Annotated, Any

from toolgym import Param
from toolgym.mocks import App, insert_rows, ok, read, unprocessable, write

SHELVES = ("baking", "grains", "spices")
STOCK = (
    ("flour", "baking", 1500),
    ("sugar", "baking", 800),
    ("rice", "grains", 2500),
    ("oats", "grains", 600),
    ("pepper", "spices", 40),
)


class PantryApp(App):
    name = "pantry"
    description = "A pantry: an item's stock in grams, a shelf's items, use or restock an item."
    version = "1"
    schema = """
    CREATE TABLE pantry_items (
        item TEXT PRIMARY KEY,
        shelf TEXT NOT NULL,
        grams INTEGER NOT NULL
    );
    """

    def seed(self, db: Any, rng: random.Random, clock: datetime) -> None:
        rows = [{"item": item, "shelf": shelf, "grams": grams} for item, shelf, grams in STOCK]
        insert_rows(db, "pantry_items", rows)

    @read
    def get_item(self, item: Annotated[str, Param("the item's name, e.g. flour")]) -> dict[str, Any]:
        """How many grams of an item are left, and its shelf."""
        return ok(item=self.get_or_404("pantry_items", "item", item, what="item"))

    @read
    def list_shelf(self, shelf: Annotated[str, Param("the shelf", enum=SHELVES)]) -> dict[str, Any]:
        """The items on a shelf, by name."""
        items = self.rows("SELECT * FROM pantry_items WHERE shelf = ? ORDER BY item", [shelf])
        return ok(items=items, count=len(items))

    @write
    def use_item(
        self,
        item: Annotated[str, Param("the item's name")],
        grams: Annotated[int, Param("how many grams to take")],
    ) -> dict[str, Any]:
        """Take grams of an item; refused when fewer are left."""
        row = self.get_or_404("pantry_items", "item", item, what="item")
        if grams <= 0 or grams > row["grams"]:
            raise unprocessable(f"cannot take {grams} g of {item}: {row['grams']} g left")
        left = row["grams"] - grams
        self.execute("UPDATE pantry_items SET grams = ? WHERE item = ?", (left, item))
        return ok(item=item, grams_left=left)

    @write
    def restock(
        self,
        item: Annotated[str, Param("the item's name")],
        grams: Annotated[int, Param("how many grams to add")],
    ) -> dict[str, Any]:
        """Add grams of an item already in the pantry."""
        row = self.get_or_404("pantry_items", "item", item, what="item")
        if grams <= 0:
            raise unprocessable(f"cannot add {grams} g")
        total = row["grams"] + grams
        self.execute("UPDATE pantry_items SET grams = ? WHERE item = ?", (total, item))
        return ok(item=item, grams_left=total)
