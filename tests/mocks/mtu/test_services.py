"""MTU service apps on their seeded data: banking, library, smart home, weather, homes."""

from __future__ import annotations

from tests.mocks.mtu import count_rows, fails, make_world
from toolgym.mocks.world import MockWorld


def cents(world: MockWorld, account: str) -> int:
    return int(world.rows("mtu_banking_accounts", {"account_number": account})[0]["balance_cents"])


# ---- banking ------------------------------------------------------------------------------------
def test_transfers_move_money_and_never_overdraw() -> None:
    world = make_world("mtu_banking")
    total = sum(a["balance_cents"] for a in world.rows("mtu_banking_accounts"))
    checking, savings = cents(world, "123456"), cents(world, "7891011")
    assert world.call("get_account_balance", account_number="123456")["balance"] == f"${checking / 100:,.2f}"
    done = world.call(
        "transfer_funds",
        account_number="123456",
        source_account="checking",
        destination_account="savings",
        amount=500,
        transfer_speed="now",
    )
    assert done["transfer_status"] == "completed"
    assert cents(world, "123456") == checking - 50000 and cents(world, "7891011") == savings + 50000
    assert sum(a["balance_cents"] for a in world.rows("mtu_banking_accounts")) == total
    recent = world.call("get_recent_transactions", account_number="123456", transaction_type="transfer")
    assert recent["transactions"][0]["amount"] == -500
    fails(
        world,
        "transfer_funds",
        422,
        account_number="123456",
        source_account="checking",
        destination_account="savings",
        amount=10**7,
        transfer_speed="now",
    )
    fails(
        world,
        "transfer_funds",
        400,
        account_number="123456",
        source_account="checking",
        destination_account="savings",
        amount=5,
        transfer_speed="later",
    )
    fails(
        world,
        "transfer_funds",
        404,
        account_number="000",
        source_account="checking",
        destination_account="savings",
        amount=5,
        transfer_speed="now",
    )
    scheduled = world.call(
        "transfer_funds",
        account_number="17528472632",
        source_account="checking",
        destination_account="savings",
        amount=50,
        transfer_speed="scheduled",
        schedule_time="2024-01-05T09:00:00",
    )
    assert scheduled["transfer_id"] and count_rows(world, "mtu_banking_scheduled") == 1
    world.call("freeze_bank_account", account_number="239267492492", freeze_reason="fraud")
    fails(world, "freeze_bank_account", 409, account_number="239267492492")
    fails(
        world,
        "transfer_funds",
        409,
        account_number="239267492492",
        source_account="checking",
        destination_account="savings",
        amount=1,
        transfer_speed="now",
    )
    fails(world, "get_recent_transactions", 400, account_number="123456", transaction_type="gift")


def test_sgd_bank_and_payments() -> None:
    world = make_world("mtu_banking")
    before = world.call("CheckBalance", account_type="checking")["balance"]
    sent = world.call("TransferMoney", account_type="checking", amount=20, recipient_account_name="Philip")
    assert sent["balance"] == before - 20
    fails(world, "TransferMoney", 404, account_type="checking", amount=20, recipient_account_name="Nobody")
    fails(world, "CheckBalance", 400, account_type="crypto")
    wallet = world.rows("mtu_banking_wallet")[0]["app_balance_cents"]
    world.call(
        "MakePayment", payment_method="app balance", amount=20, receiver="John", private_visibility=True
    )
    assert world.rows("mtu_banking_wallet")[0]["app_balance_cents"] == wallet - 2000
    fails(world, "MakePayment", 422, payment_method="app balance", amount=10**5, receiver="John")
    fails(world, "MakePayment", 404, payment_method="debit card", amount=1, receiver="Stranger")
    world.call("RequestPayment", receiver="Rachel", amount=15.5)
    fails(world, "RequestPayment", 409, receiver="rachel", amount=15.5)


# ---- library ------------------------------------------------------------------------------------
def test_library_loans_fees_and_holds() -> None:
    world = make_world("mtu_library")
    fees = world.call("get_late_fees", library_ID=123456)
    assert fees["late_fees"] > 0
    loans = world.rows("mtu_library_loans", {"library_number": 123456})
    title = world.store.conn.execute(
        "SELECT b.title FROM mtu_library_copies c JOIN mtu_library_books b USING (book_id) WHERE c.copy_id = ?",
        (loans[-1]["copy_id"],),
    ).fetchone()[0]
    renewed = world.call("renew_books", library_number=123456, book_names=title)
    assert renewed["renewal_period"] == 14
    assert renewed["total_amount_due"] == round(fees["total_owed"] + 0.5, 2)
    world.call("renew_books", library_number=123456, book_names=title)
    fails(world, "renew_books", 409, library_number=123456, book_names=title)  # renewed twice already
    fails(world, "renew_books", 404, library_number=123456, book_names="Moby Dick and Emma")
    owed = world.call("get_late_fees", library_ID=123456)["total_owed"]
    paid = world.call(
        "make_payment", account_number="123456", payment_amount=owed, payment_method="Credit Card"
    )
    assert paid["remaining_balance"] == 0
    fails(world, "make_payment", 422, account_number="123456", payment_amount=1, payment_method="paypal")
    status = world.call("get_book_status", book_title=title)
    assert status["book_status"] in ("in stock", "checked out", "reserved")
    out = next(
        b["title"]
        for b in world.rows("mtu_library_books")
        if world.call("get_book_status", book_title=b["title"])["book_status"] == "checked out"
    )
    world.call("reserve_book", book_title=out, card_number=1245521)
    fails(world, "reserve_book", 409, book_title=out, card_number=1245521)
    shelf = next(
        b["title"]
        for b in world.rows("mtu_library_books")
        if world.call("get_book_status", book_title=b["title"])["book_status"] == "in stock"
    )
    fails(world, "reserve_book", 409, book_title=shelf, card_number=1245521)
    fails(world, "reserve_book", 400, book_title=out, card_number=1245521, book_format="scroll")
    fails(world, "get_late_fees", 404, library_ID=42)
    joined = world.call("apply_for_membership", city_of_residence="Atlanta")
    assert joined["membership_fee"] == 5.0
    assert world.call("get_late_fees", library_ID=joined["library_number"])["total_owed"] == 5.0
    assert world.call("apply_for_membership", city_of_residence="New York")["membership_fee"] == 0


# ---- smart home ---------------------------------------------------------------------------------
def test_smart_home() -> None:
    world = make_world("mtu_smart_home")
    world.call("adjust_room_temperature", temperature=72, location="the bedroom")
    assert world.call("get_current_temperature", location="bedroom")["temperature"] == 72
    fails(world, "adjust_room_temperature", 400, temperature=120, location="bedroom")
    fails(world, "adjust_room_temperature", 422, temperature=70, location="outside")
    fails(world, "get_current_temperature", 404, location="attic")
    open_doors = world.rows("mtu_smart_home_doors", {"is_open": 1})
    for d in open_doors:
        fails(world, "lock_door", 409, door_name=d["door"])
    world.call("lock_door", door_name="front")
    assert world.call("check_door_status", door_location="front door")["door_status"] == "locked"
    world.call("adjust_lighting", location="kitchen", action="turn off")
    assert world.rows("mtu_smart_home_rooms", {"location": "kitchen"})[0]["light_on"] == 0
    fails(world, "adjust_lighting", 400, location="kitchen", action="sparkle")
    fails(world, "adjust_music_volume", 409, volume=40)
    schema = world.tools.get("play_music").parameters_schema()
    assert "song/playlist" in schema["required"]
    world.call("play_music", **{"song/playlist": "Jazz classics", "location": "kitchen"})
    assert world.call("adjust_music_volume", volume=40)["volume"] == 40
    fails(world, "play_music", None, song_playlist="x")  # the Python name is not published


# ---- weather ------------------------------------------------------------------------------------
def test_weather() -> None:
    world = make_world("mtu_weather")
    ny = world.call("GetWeather", city="New York", date="2024-01-04")
    row = world.store.conn.execute(
        "SELECT d.temp_high_f FROM mtu_weather_days d JOIN mtu_weather_places p USING (place_id)"
        " WHERE p.name = 'New York' AND d.date = '2024-01-04'"
    ).fetchone()
    assert ny["temperature"] == row[0]
    here = world.call("GetWeather")
    assert here["city"] == "San Francisco" and here["date"] == "2024-01-01"
    park = world.call("GetWeather", geographic_poi="custer national forest", condition_temperature="freezing")
    assert park["condition_temperature_holds"] == (park["temperature_low"] <= 32)
    assert world.call("GetWeather", state="nebraska")["city"] == "Omaha"
    fails(world, "GetWeather", 404, city="Seattle", date="2024-06-01")
    fails(world, "GetWeather", 404, city="Gotham")
    fails(world, "GetWeather", 400, city="Seattle", condition_temperature="spicy")


# ---- homes --------------------------------------------------------------------------------------
def test_homes_and_visits() -> None:
    world = make_world("mtu_homes")
    homes = world.call("FindHomeByArea", area="Seattle", intent="rent", number_of_beds="2", number_of_baths=1)
    found = homes["properties"]
    assert found and all(h["number_of_beds"] == 2 and h["intent"] == "rent" for h in found)
    assert [h["price"] for h in found] == sorted(h["price"] for h in found)
    garage = world.call(
        "FindHomeByArea",
        area="Seattle",
        intent="rent",
        number_of_beds=2,
        number_of_baths=1,
        has_garage="true",
    )["properties"]
    assert all(h["has_garage"] for h in garage)
    fails(world, "FindHomeByArea", 400, area="Seattle", intent="lease", number_of_beds=2, number_of_baths=1)
    name = found[0]["property_name"]
    world.call("ScheduleVisit", property_name=name, visit_date="2024-01-05")
    fails(world, "ScheduleVisit", 409, property_name=name, visit_date="2024-01-05")
    fails(world, "ScheduleVisit", 422, property_name=name, visit_date="2023-12-05")
    fails(world, "ScheduleVisit", 404, property_name="Castle Nowhere", visit_date="2024-01-05")
    pets = world.call("FindApartment", area="San Francisco", number_of_beds=2, pets_allowed=True)[
        "apartments"
    ]
    assert all(a["pets_allowed"] and a["intent"] == "rent" for a in pets)
