"""MTU Contacts app (toolgym.mocks.apps.mtu.contacts) on its seeded data (real SQLite)."""

from __future__ import annotations

from tests.mocks.apps.mtu import count_rows, fails, make_world


def test_contacts_lifecycle() -> None:
    world = make_world("mtu_contacts")
    made = world.call(
        "add_new_contact", contact_name="Dana Scully", phone_number="415-555-0134", email="d@x.org"
    )
    assert made["phone_numbers"] == ["415-555-0134"]
    fails(world, "add_new_contact", 409, contact_name="dana scully", phone_number="415-555-0199")
    fails(world, "add_new_contact", 400, contact_name="Fox", phone_number="12")
    fails(world, "add_new_contact", 400, contact_name="Fox", phone_number="415-555-0100", email="nope")
    assert world.call("search_contact", phone_number="5550134")["contact_name"] == "Dana Scully"
    updated = world.call(
        "update_contact_information", name="Dana Scully", new_information={"phone_number": "415-555-0200"}
    )
    assert updated["phone_numbers"] == ["415-555-0134", "415-555-0200"]  # no old number given: added
    updated = world.call(
        "update_contact_information",
        name="Dana Scully",
        new_information={"email": "dana@fbi.gov"},
        email="d@x.org",
    )
    assert updated["emails"] == ["dana@fbi.gov"]
    fails(world, "update_contact_information", 400, name="Dana Scully", new_information={"shoe_size": "7"})
    left = world.call("delete_contact_number", contact_name="Dana Scully", number_order=1)
    assert left["phone_numbers"] == ["415-555-0200"]
    fails(world, "delete_contact_number", 404, contact_name="Dana Scully", number_order=3)
    world.call("delete_contact_email", contact_name="Dana Scully")
    shared = world.call("ShareLocation", location="1 Main Street", contact_name="Dana")
    assert shared["contact_name"] == "Dana Scully" and count_rows(world, "mtu_contacts_shares") == 1
    world.call("delete_contact", contact_name="Dana Scully")
    fails(world, "delete_contact", 404, contact_name="Dana Scully")
    fails(world, "ShareLocation", 409, location="x", contact_name="John")  # several Johns
