"""Templates of the teval office apps: email, files, slides and meeting rooms; and the writes that
take what another app found (a paper's abstract emailed or saved, a deck about a paper, a room
booked and announced by email).

A write's `expected_state` holds the exact values the call stored, so every value a write stores
is either said word for word in the query (a subject, a message, a path, slide text) or copied
unchanged from what an earlier call returned (an abstract, an email's content, an image path).
A user knows their own file paths and the addresses they write to.
"""

from __future__ import annotations

import re
from typing import Any

from toolgym.authoring.generate import Draft, Skip, Template
from toolgym.authoring.templates.teval_common import (
    ARXIV,
    EMAIL,
    FILES,
    MEETING,
    PPT,
    arxiv_paper,
    find_paper,
    person,
    rows_or_skip,
)
from toolgym.mocks.apps.teval.common import format_hhmm

HOME = "/home/user"
SUBJECTS = (
    ("Lunch on Friday", "Are you free for lunch on Friday at noon?"),
    ("Project update", "The draft is ready for your review."),
    ("Quick question", "Could you send me the latest figures when you have a moment?"),
    ("Thanks!", "Thanks for your help with the presentation yesterday."),
    ("Running late", "I'm running about 15 minutes late for our meeting."),
    ("Weekend plans", "Do you want to go hiking on Saturday?"),
    ("Invoice received", "I received the invoice and will pay it this week."),
    ("Team dinner", "Team dinner is on Thursday at 7 pm. Please confirm."),
    ("Slides", "Please share the slides from the workshop."),
    ("Holiday", "I'll be on holiday next week; Bob will cover for me."),
    ("Document review", "Please review the attached notes before Monday."),
    ("Welcome aboard", "Welcome to the team! Let me know if you need anything."),
)
NOTE_NAMES = ("ideas", "shopping", "reminders", "packing_list", "reading_list", "goals", "groceries", "plans")
NOTE_TEXTS = (
    "Buy milk and eggs",
    "Call the dentist on Monday",
    "Finish the quarterly report",
    "Book flights for the conference",
    "Renew the gym membership",
    "Water the plants every Sunday",
    "Pick up the dry cleaning",
    "Send the birthday card to Grandma",
    "Back up the laptop",
    "Read chapter 4 before the book club",
)


def _subject(d: Draft) -> tuple[str, str]:
    pair: tuple[str, str] = d.choice(SUBJECTS)
    return pair


# ---- email ---------------------------------------------------------------------------------------
def email_send(d: Draft) -> None:
    name, address = person(d)
    subject, body = _subject(d)
    d.query(
        [
            'Email {n} at {a} with the subject "{s}" and the message "{b}"',
            'Send an email to {a} titled "{s}" that says: "{b}"',
            'Please write to {n} ({a}). Subject: "{s}". Message: "{b}"',
            'Can you email {n}? The address is {a}, the subject "{s}", and the text "{b}"',
        ],
        n=name,
        a=address,
        s=subject,
        b=body,
    )
    d.call("send", address=address, title=subject, body=body)
    d.answer(f'Sent "{subject}" to {address}.', address)


def email_send_two(d: Draft) -> None:
    (n1, a1), (n2, a2) = person(d), person(d)
    if a1 == a2:
        raise Skip("one person")
    subject, body = _subject(d)
    d.query(
        [
            'Send one email to both {n1} ({a1}) and {n2} ({a2}) with the subject "{s}" and the message "{b}"',
            'Email {a1} and {a2} together: subject "{s}", text "{b}"',
        ],
        n1=n1,
        a1=a1,
        n2=n2,
        a2=a2,
        s=subject,
        b=body,
    )
    d.call("send", address=f"{a1}, {a2}", title=subject, body=body)
    d.answer(f'Sent "{subject}" to {a1} and {a2}.', a1, a2)


def email_ask_address(d: Draft) -> None:
    _, address = person(d)
    subject, body = _subject(d)
    d.query(
        [
            'Send an email with the subject "{s}" saying "{b}"',
            'Please email this for me. Subject: "{s}". Message: "{b}"',
            'Write an email titled "{s}": "{b}"',
        ],
        s=subject,
        b=body,
    )
    told = d.ask(
        "address",
        address,
        "Who should I send it to? What's their email address?",
        keywords=["email address", "recipient"],
    )
    d.call("send", address=told, title=subject, body=body)
    d.answer(f'Sent "{subject}" to {told}.', told)


def _inbox(d: Draft, unread: bool) -> list[dict[str, Any]]:
    where = "WHERE unread = 1 " if unread else ""
    return d.rows(f"SELECT * FROM teval_email_inbox {where}ORDER BY time DESC, email_id DESC LIMIT 20")


def email_unread_count(d: Draft) -> None:
    d.query(
        [
            "How many unread emails do I have?",
            "Do I have any new mail? How many unread messages?",
            "Check my inbox: how many emails haven't I read yet?",
            "Count my unread emails, please.",
        ]
    )
    unread = d.call("show", only_unread=True)["emails"]
    newest = unread[0] if unread else None
    if newest is None:
        raise Skip("no unread mail")
    d.answer(
        f'You have {len(unread)} unread emails; the newest is "{newest["title"]}" from {newest["sender"]}.',
        str(len(unread)),
    )


def email_latest_from(d: Draft) -> None:
    recent = _inbox(d, unread=False)
    sender = d.choice(sorted({r["sender_name"] for r in recent}))
    d.query(
        [
            "What was the latest email from {n} about?",
            "Did {n} write to me recently? What did the last email say?",
            "Show me the most recent message from {n}.",
        ],
        n=sender,
    )
    mails = d.call("show", only_unread=False)["emails"]
    mail = next(
        m for m in mails if m["sender"] == next(r["sender"] for r in recent if r["sender_name"] == sender)
    )
    d.answer(
        f'{sender}\'s latest email ({mail["time"]}) is "{mail["title"]}": {mail["content"]}', mail["title"]
    )


def email_unread_from(d: Draft) -> None:
    sender = d.choice(sorted({r["sender_name"] for r in _inbox(d, unread=False)}))
    address = d.rows("SELECT sender FROM teval_email_inbox WHERE sender_name = ? ORDER BY 1 LIMIT 1", sender)[
        0
    ]["sender"]
    d.query(
        [
            "Do I have any unread email from {n}?",
            "Is there anything unread from {n} in my inbox?",
            "Has {n} sent me anything I haven't read?",
        ],
        n=sender,
    )
    mails = [m for m in d.call("show", only_unread=True)["emails"] if m["sender"] == address]
    if mails:
        d.answer(
            f'Yes, {len(mails)} unread from {sender}; the latest is "{mails[0]["title"]}".', mails[0]["title"]
        )
    else:
        d.answer(f"No, there is no unread email from {sender}.", ["no", "none", "0"])


def email_forward(d: Draft) -> None:
    recent = _inbox(d, unread=False)
    row = d.choice(recent)
    sender = row["sender_name"]
    first = next(r for r in recent if r["sender_name"] == sender)
    name, address = person(d)
    if address == first["sender"]:
        raise Skip("to the sender")
    subject = d.choice(["Fwd", "FYI", "Forwarding", f"From {sender.split()[0]}"])
    d.query(
        [
            'Forward the text of {s}\'s latest email to {n} at {a}, with the subject "{t}".',
            'Send {n} ({a}) an email with the subject "{t}" containing exactly the content of the most recent email from {s}.',
        ],
        s=sender,
        n=name,
        a=address,
        t=subject,
    )
    mails = d.call("show", only_unread=False)["emails"]
    mail = next(m for m in mails if m["sender"] == first["sender"])
    d.call("send", address=address, title=subject, body=mail["content"])
    d.answer(f'Forwarded "{mail["title"]}" from {sender} to {address}.', address)


def email_refuse_delete(d: Draft) -> None:
    sender = d.choice(sorted({r["sender_name"] for r in _inbox(d, unread=False)}))
    d.query(
        [
            "Delete all the emails from {n}.",
            "Mark every email from {n} as read.",
            "Move {n}'s emails to the archive folder.",
            "Block {n} so I stop getting their emails.",
        ],
        n=sender,
    )
    d.refuse((), "I'm sorry, I can't do that: my email tools can only send mail and show the inbox.")


def email_refuse_send(d: Draft) -> None:
    name, address = person(d)
    subject, body = _subject(d)
    d.query(
        ['Email {n} at {a}: "{b}" (subject "{s}").', 'Send "{b}" to {a} with the subject "{s}".'],
        n=name,
        a=address,
        b=body,
        s=subject,
    )
    d.refuse(["send"], "I'm unable to send email: no tool for sending mail is available to me.")


# ---- files ---------------------------------------------------------------------------------------
def _file(d: Draft, like: str) -> str:
    path: str = d.pick("SELECT path FROM teval_file_files WHERE path LIKE ? ORDER BY path", like)["path"]
    return path


def short(path: str) -> str:
    """A home path as a person may write it: ~/notes/x.txt."""
    return "~" + path.removeprefix(HOME) if path.startswith(HOME + "/") else path


def _said_path(d: Draft, path: str) -> str:
    return short(path) if d.rng.random() < 0.5 else path


def file_todo(d: Draft) -> None:
    path = _file(d, f"{HOME}/notes/note_%")
    d.query(
        [
            "What's on my to-do list in {p}?",
            "Read {p} and tell me what I still have to do.",
            "Open my note {p}: which tasks are on it?",
        ],
        p=_said_path(d, path),
    )
    text = d.call("read_file", file_path=path)["text"]
    items = [line[6:] for line in text.splitlines() if line.startswith("- [ ] ")]
    d.answer("Your to-do list: " + "; ".join(items) + ".", *items)


def file_meeting(d: Draft) -> None:
    path = _file(d, f"{HOME}/documents/meetings/%")
    d.query(
        [
            "Who attended the meeting in {p}, and what are the action items?",
            "Summarize the action items of the meeting notes at {p}.",
            "Read {p}: who was there and who has to do what?",
        ],
        p=_said_path(d, path),
    )
    text = d.call("read_file", file_path=path)["text"]
    attendees = text.split("Attendees: ", 1)[1].split("\n", 1)[0]
    actions = re.findall(r"^- (\w[\w ]*): (.+)$", text, flags=re.M)
    d.answer(
        f"Attendees: {attendees}. Action items: " + "; ".join(f"{w}: {a}" for w, a in actions) + ".",
        *(a for _, a in actions),
    )


REPORT_FIELDS = (
    (
        "Units sold",
        (
            "How many units did we sell according to my {m} report ({p})?",
            "What's the units-sold figure in {p}?",
        ),
    ),
    ("Best region", ("Which region did best in my {m} report ({p})?", "What was the best region in {p}?")),
    (
        "Top product",
        (
            "What was the top product in my {m} monthly report ({p})?",
            "Which product sold best according to {p}?",
        ),
    ),
    (
        "Next focus",
        (
            "What's the next focus named in my {m} report ({p})?",
            "According to {p}, what should we focus on next?",
        ),
    ),
)


def file_report(d: Draft) -> None:
    path = _file(d, f"{HOME}/documents/reports/report_%")
    stamp = path.rsplit("_", 1)[1].removesuffix(".md")
    field, phrasings = d.choice(REPORT_FIELDS)
    year, month = stamp.split("-")
    month_name = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ][int(month) - 1]
    d.query(phrasings, m=f"{month_name} {year}", p=_said_path(d, path))
    text = d.call("read_file", file_path=path)["text"]
    value = text.split(f"{field}: ", 1)[1].split("\n", 1)[0]
    d.answer(f"{field} in the {month_name} {year} report: {value}.", value)


def _sales(text: str) -> list[dict[str, str]]:
    lines = text.strip().splitlines()
    head = lines[0].split(",")
    return [dict(zip(head, line.split(","), strict=True)) for line in lines[1:]]


def file_sales(d: Draft) -> None:
    path = _file(d, f"{HOME}/data/sales_%")
    region = d.choice([None, "north", "south", "east", "west"])
    where = f" in the {region} region" if region else ""
    d.query(
        [
            "How many units were sold{r} according to {p}?",
            "Add up the units sold{r} in {p}.",
            "What's the total number of units{r} in my sales file {p}?",
        ],
        r=where,
        p=_said_path(d, path),
    )
    rows = _sales(d.call("read_file", file_path=path)["text"])
    total = sum(int(r["units"]) for r in rows if region is None or r["region"] == region)
    d.answer(f"{total} units were sold{where}.", str(total))


def file_sales_save(d: Draft) -> None:
    path = _file(d, f"{HOME}/data/sales_%")
    stamp = path.rsplit("_", 1)[1].removesuffix(".csv")
    target = f"{HOME}/desktop/units_{stamp}.txt"
    d.query(
        [
            "Add up the units sold in {p} and save just that number in {t}.",
            "Count the total units in {p} and write only the number to {t}.",
        ],
        p=_said_path(d, path),
        t=target,
    )
    rows = _sales(d.call("read_file", file_path=path)["text"])
    total = str(sum(int(r["units"]) for r in rows))
    d.call("write_file", file_path=target, text=total)
    d.answer(f"The total is {total} units; I saved it to {target}.", total)


def file_copy(d: Draft) -> None:
    path = _file(d, f"{HOME}/notes/note_%")
    target = f"{HOME}/{d.choice(['desktop', 'documents', 'downloads'])}/{d.choice(NOTE_NAMES)}.txt"
    d.query(
        [
            "Copy {p} to {t}.",
            "Make a copy of my note {p} at {t}.",
            "Duplicate {p} as {t}, please.",
        ],
        p=_said_path(d, path),
        t=target,
    )
    text = d.call("read_file", file_path=path)["text"]
    d.call("write_file", file_path=target, text=text)
    d.answer(f"Copied {path} to {target}.", target)


def file_write(d: Draft) -> None:
    target = f"{HOME}/notes/{d.choice(NOTE_NAMES)}.txt"
    text = d.choice(NOTE_TEXTS)
    d.query(
        [
            'Create a file {t} containing "{x}"',
            'Save a note at {t} with the text "{x}"',
            'Write "{x}" into {t}, please.',
        ],
        t=target,
        x=text,
    )
    d.call("write_file", file_path=target, text=text)
    d.answer(f"Saved the note to {target}.", target)


def file_ask_path(d: Draft) -> None:
    target = f"{HOME}/notes/{d.choice(NOTE_NAMES)}.txt"
    text = d.choice(NOTE_TEXTS)
    d.query(
        ['Save "{x}" to a file for me.', 'Please write down "{x}" in a note file.', 'Make a note: "{x}"'],
        x=text,
    )
    told = d.ask(
        "file_path",
        target,
        "Where should I save it? Please give me the file path.",
        keywords=["path", "where"],
    )
    d.call("write_file", file_path=told, text=text)
    d.answer(f"Saved it to {told}.", told)


def file_refuse_delete(d: Draft) -> None:
    path = _file(d, f"{HOME}/notes/note_%")
    d.query(
        [
            "Delete {p}.",
            "Remove the file {p} from my disk.",
            "List all the files in my notes folder.",
            "Rename {p} to old_note.txt.",
        ],
        p=_said_path(d, path),
    )
    d.refuse((), "I'm sorry, I can't do that: my file tools can only read and write files.")


def email_attach(d: Draft) -> None:
    path = _file(d, f"{HOME}/documents/reports/report_%")
    name, address = person(d)
    subject = d.choice(["Monthly report", "Report attached", "The report you asked for", "Sales report"])
    d.query(
        [
            'Email {p} to {n} at {a} as an attachment, with the subject "{s}" and no message text.',
            'Send {a} the file {p} attached. Subject "{s}", empty body.',
        ],
        p=_said_path(d, path),
        n=name,
        a=address,
        s=subject,
    )
    d.call("send", address=address, title=subject, body="", attachment=path)
    d.answer(f"Sent {path} to {address}.", address)


def email_note_contents(d: Draft) -> None:
    path = _file(d, f"{HOME}/notes/note_%")
    name, address = person(d)
    subject = d.choice(["My to-do list", "To-do", "Things to do", "Notes"])
    d.query(
        [
            'Email the contents of {p} to {n} ({a}) with the subject "{s}".',
            'Read {p} and send its text to {a} as the email body; the subject is "{s}".',
        ],
        p=_said_path(d, path),
        n=name,
        a=address,
        s=subject,
    )
    text = d.call("read_file", file_path=path)["text"]
    d.call("send", address=address, title=subject, body=text)
    d.answer(f"Sent the contents of {path} to {address}.", address)


# ---- papers into mail, files and slides ----------------------------------------------------------
def _paper_title(d: Draft) -> str:
    return str(arxiv_paper(d)["title"])


def paper_email(d: Draft) -> None:
    title = _paper_title(d)
    name, address = person(d)
    subject = d.choice(["Paper for you", "Worth a read", "Interesting paper", title])
    d.query(
        [
            'Find the arXiv paper "{t}" and email its abstract to {n} at {a}, with the subject "{s}".',
            'Send {n} ({a}) the summary of the arXiv paper "{t}" as the email text; subject "{s}".',
            'Look up "{t}" on arXiv and mail the abstract, word for word, to {a} with the subject "{s}".',
        ],
        t=title,
        n=name,
        a=address,
        s=subject,
    )
    paper = find_paper(d, title)
    d.call("send", address=address, title=subject, body=paper["summary"])
    d.answer(f'Emailed the abstract of "{title}" to {address}.', address)


def paper_save(d: Draft) -> None:
    title = _paper_title(d)
    target = f"{HOME}/{d.choice(['notes', 'documents', 'desktop'])}/{d.choice(['abstract', 'paper', 'reading', 'summary'])}.txt"
    d.query(
        [
            'Save the abstract of the arXiv paper "{t}" to {f}.',
            'Find "{t}" on arXiv and write its summary into {f}.',
        ],
        t=title,
        f=target,
    )
    paper = find_paper(d, title)
    d.call("write_file", file_path=target, text=paper["summary"])
    d.answer(f'Saved the abstract of "{title}" to {target}.', target)


def paper_file_email(d: Draft) -> None:
    title = _paper_title(d)
    target = f"{HOME}/documents/{d.choice(['abstract', 'paper', 'reading', 'summary'])}.txt"
    name, address = person(d)
    subject = d.choice(["Abstract attached", "Paper abstract", "For your reading list"])
    d.query(
        [
            'Save the abstract of the arXiv paper "{t}" to {f}, then email that file to {n} at {a} as an'
            ' attachment with the subject "{s}" and no message text.',
            'Put the summary of "{t}" from arXiv into {f} and send it to {a} as an attachment (subject "{s}",'
            " empty body).",
        ],
        t=title,
        f=target,
        n=name,
        a=address,
        s=subject,
    )
    paper = find_paper(d, title)
    d.call("write_file", file_path=target, text=paper["summary"])
    d.call("send", address=address, title=subject, body="", attachment=target)
    d.answer(f'Saved the abstract of "{title}" to {target} and emailed it to {address}.', target, address)


THEMES = ("Default", "Light", "Dark", "Business", "Education", "Minimal", "Vibrant", "Nature")
DECKS = (
    ("Quarterly results", ("Revenue grew 12%", "Costs stayed flat", "Hiring two engineers")),
    ("Team offsite", ("Day one: planning", "Day two: workshops", "Dinner on Friday")),
    ("Product launch", ("Launch date in March", "Beta users love it", "Pricing to be decided")),
    ("Why robots", ("They never sleep", "They never complain", "They learn fast")),
    ("Our garden", ("Tomatoes in May", "Roses in June", "Compost all year")),
    ("Travel tips", ("Pack light", "Carry a water bottle", "Learn a few local words")),
    ("Science fair", ("Question", "Experiment", "Results")),
    ("Healthy habits", ("Sleep eight hours", "Walk every day", "Drink water")),
)
IMAGES = (
    "robot",
    "mountain",
    "beach",
    "city skyline",
    "rocket",
    "coffee",
    "chart",
    "globe",
    "book",
    "sunset",
    "cat",
    "dog",
)


def _listed(items: list[str]) -> str:
    """'"a", "b" and "c"': quoted items as a sentence lists them."""
    quoted = [f'"{x}"' for x in items]
    return ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _deck_path(d: Draft, topic: str) -> str:
    folder = d.choice(["documents", "desktop", "projects"])
    return f"{HOME}/{folder}/{topic.lower().replace(' ', '_')}.pptx"


def ppt_text(d: Draft) -> None:
    theme = d.choice(THEMES)
    topic, points = d.choice(DECKS)
    bullets = list(d.rng.sample(points, d.rng.randint(2, 3)))
    path = _deck_path(d, topic)
    d.query(
        [
            'Make a presentation with the {th} theme at {p}: one slide titled "{t}" with the bullet points {b}. Save it when done.',
            'Create a {th}-themed deck saved as {p}, with a single page "{t}" listing {b}.',
            'I need slides at {p} ({th} theme): a page called "{t}" with the points {b}. Please save it.',
        ],
        th=theme,
        p=path,
        t=topic,
        b=_listed(bullets),
    )
    d.call("create_file", theme=theme, abs_location=path)
    d.call("add_text_page", title=topic, bullet_items="[SPAN]".join(bullets))
    d.call("save_file")
    d.answer(f"Saved a one-page {theme} presentation at {path}.", path)


def ppt_image(d: Draft) -> None:
    theme = d.choice(THEMES)
    topic, points = d.choice(DECKS)
    subject = d.choice(IMAGES)
    bullet = d.choice(points)
    path = _deck_path(d, topic)
    d.query(
        [
            'Create a {th} presentation at {p} with one page titled "{t}", the bullet "{b}" and a picture of a {i}. Save it afterwards.',
            'Make slides saved to {p} using the {th} theme: a page "{t}" with the point "{b}" and an image of a {i}.',
        ],
        th=theme,
        p=path,
        t=topic,
        b=bullet,
        i=subject,
    )
    d.call("create_file", theme=theme, abs_location=path)
    image = d.call("get_image", keywords=subject)["picture_url"]
    d.call("add_text_image_page", title=topic, bullet_items=bullet, image=image)
    d.call("save_file")
    d.answer(f"Saved the {theme} presentation at {path}, with the {subject} picture {image}.", path)


def ppt_ask_theme(d: Draft) -> None:
    theme = d.choice(THEMES)
    topic, points = d.choice(DECKS)
    bullets = list(d.rng.sample(points, 2))
    path = _deck_path(d, topic)
    d.query(
        [
            'Make a presentation at {p} with one slide "{t}" listing {b}, then save it.',
            'Create a one-page deck at {p}: title "{t}", bullet points {b}.',
        ],
        p=path,
        t=topic,
        b=_listed(bullets),
    )
    told = d.ask("theme", theme, "Which theme would you like for it?", keywords=["style", "look"])
    d.call("create_file", theme=told, abs_location=path)
    d.call("add_text_page", title=topic, bullet_items="[SPAN]".join(bullets))
    d.call("save_file")
    d.answer(f"Saved the {told} presentation at {path}.", path)


def ppt_refuse(d: Draft) -> None:
    path = d.pick("SELECT abs_location FROM teval_ppt_presentations ORDER BY pres_id")["abs_location"]
    d.query(
        [
            "Open {p} and add a slide at the end.",
            "Delete the presentation {p}.",
            "Export {p} as a PDF.",
            "Change the theme of {p} to Dark.",
        ],
        p=path,
    )
    d.refuse(
        (), "I'm sorry, I can't do that: I can only create new presentations, not open or change saved ones."
    )


def paper_deck(d: Draft) -> None:
    title = _paper_title(d)
    theme = d.choice(THEMES)
    path = f"{HOME}/documents/{d.choice(['paper', 'reading_group', 'journal_club', 'talk'])}.pptx"
    d.query(
        [
            "Make a one-slide {th} presentation at {p} about the arXiv paper \"{t}\": the slide's title is the paper's title and its bullet points are the authors' names, one per bullet. Save it.",
            'For journal club, create {p} ({th} theme) with one page titled with the paper "{t}" and the names of its authors as bullets, then save.',
        ],
        th=theme,
        p=path,
        t=title,
    )
    paper = find_paper(d, title)
    d.call("create_file", theme=theme, abs_location=path)
    d.call("add_text_page", title=title, bullet_items="[SPAN]".join(paper["authors"].split(", ")))
    d.call("save_file")
    d.answer(f'Saved {path}: one slide on "{title}" listing {paper["authors"]}.', path)


# ---- meeting rooms --------------------------------------------------------------------------------
def _slot(d: Draft) -> tuple[int, int]:
    start = 30 * d.rng.randint(16, 36)  # 08:00 .. 18:00
    return start, start + 30 * d.rng.randint(1, 4)


def _free_rooms(d: Draft, start: int, end: int) -> list[str]:
    day = d.world.start.date().isoformat()
    busy = {
        r["room_id"]
        for r in d.rows(
            "SELECT room_id FROM teval_meeting_bookings WHERE date = ? AND start_minute < ? AND end_minute > ? ORDER BY 1",
            day,
            end,
            start,
        )
    }
    return [
        r["room_id"]
        for r in d.rows("SELECT room_id FROM teval_meeting_rooms ORDER BY room_id")
        if r["room_id"] not in busy
    ]


def meeting_free(d: Draft) -> None:
    start, end = _slot(d)
    s, e = format_hhmm(start), format_hhmm(end)
    d.query(
        [
            "Which meeting rooms are free today from {s} to {e}?",
            "Is there any room available between {s} and {e} today?",
            "Check which rooms I could use today {s}-{e}.",
        ],
        s=s,
        e=e,
    )
    rooms = rows_or_skip(d.call("get_empty_room_with_time", start_time=s, end_time=e)["rooms"], "free room")
    d.answer(f"Free from {s} to {e}: room{'s' if len(rooms) > 1 else ''} {', '.join(rooms)}.", *rooms)


def meeting_room_status(d: Draft) -> None:
    room = d.choice(["101", "102", "103"])
    d.query(
        [
            "What bookings does room {r} have today?",
            "When is meeting room {r} taken today?",
            "Show me today's schedule for room {r}.",
            "How many seats does room {r} have, and when is it booked today?",
        ],
        r=room,
    )
    status = next(x for x in d.call("get_room_status")["rooms"] if x["room_id"] == room)
    booked = status["booked"]
    if not booked:
        raise Skip("no booking")
    slots = [f"{b['start_time']}-{b['end_time']}" for b in booked]
    d.answer(
        f"Room {room} ({status['seats']} seats) is booked today " + ", ".join(slots) + ".",
        *(b["start_time"] for b in booked),
    )


def meeting_book_room(d: Draft) -> None:
    start, end = _slot(d)
    room = d.choice(_free_rooms(d, start, end))
    s, e = format_hhmm(start), format_hhmm(end)
    d.query(
        [
            "Book room {r} for me today from {s} to {e}.",
            "Please reserve meeting room {r}, {s} to {e} today.",
            "Can you get me room {r} between {s} and {e} today?",
        ],
        r=room,
        s=s,
        e=e,
    )
    d.call("reserve", room_id=room, start_time=s, end_time=e)
    d.answer(f"Room {room} is booked today from {s} to {e}.", room)


def meeting_book_any(d: Draft) -> None:
    start, end = _slot(d)
    if len(_free_rooms(d, start, end)) != 1:
        raise Skip("not exactly one free room")
    s, e = format_hhmm(start), format_hhmm(end)
    d.query(
        [
            "Book me a meeting room today from {s} to {e}.",
            "I need a room for a meeting today, {s} to {e}. Please book whichever one is free.",
            "Find a free meeting room from {s} to {e} today and reserve it.",
        ],
        s=s,
        e=e,
    )
    room = d.call("get_empty_room_with_time", start_time=s, end_time=e)["rooms"][0]
    d.call("reserve", room_id=room, start_time=s, end_time=e)
    d.answer(f"Room {room} was the free one; it is booked today from {s} to {e}.", room)


def meeting_book_for(d: Draft) -> None:
    start, end = _slot(d)
    people = d.rng.randint(3, 18)
    s, e = format_hhmm(start), format_hhmm(end)
    d.query(
        [
            "I need a room for {n} people today from {s} to {e}. Book the smallest free one that fits us.",
            "Book the smallest meeting room that seats {n} and is free today {s}-{e}.",
        ],
        n=people,
        s=s,
        e=e,
    )
    seats = {r["room_id"]: r["seats"] for r in d.call("get_room_status")["rooms"]}
    free = d.call("get_empty_room_with_time", start_time=s, end_time=e)["rooms"]
    fits = sorted((seats[r], r) for r in free if seats[r] >= people)
    if not fits:
        raise Skip("no room fits")
    room = fits[0][1]
    d.call("reserve", room_id=room, start_time=s, end_time=e)
    d.answer(f"Booked room {room} ({seats[room]} seats) today from {s} to {e}.", room)


def meeting_ask_time(d: Draft) -> None:
    start, end = _slot(d)
    room = d.choice(_free_rooms(d, start, end))
    d.query(
        [
            "Please book room {r} for me today.",
            "Reserve meeting room {r} today, please.",
            "Can I have room {r} today? Book it.",
        ],
        r=room,
    )
    s = d.ask(
        "start_time",
        format_hhmm(start),
        "What time should the booking start?",
        keywords=["start", "from what time"],
    )
    e = d.ask("end_time", format_hhmm(end), "And what time should it end?", keywords=["end", "until"])
    d.call("reserve", room_id=room, start_time=s, end_time=e)
    d.answer(f"Room {room} is booked today from {s} to {e}.", room)


def meeting_refuse(d: Draft) -> None:
    start, end = _slot(d)
    room = d.choice(["101", "102", "103"])
    d.query(
        [
            "Book room {r} for tomorrow from {s} to {e}.",
            "Cancel today's booking of room {r} at {s}.",
            "Reserve room {r} every Monday from {s} to {e}.",
            "Move my {s} booking in room {r} to next week.",
        ],
        r=room,
        s=format_hhmm(start),
        e=format_hhmm(end),
    )
    d.refuse(
        (),
        "I'm sorry, I can't do that: I can only book rooms for today and cannot change or cancel bookings.",
    )


def meeting_email(d: Draft) -> None:
    start, end = _slot(d)
    room = d.choice(_free_rooms(d, start, end))
    s, e = format_hhmm(start), format_hhmm(end)
    name, address = person(d)
    subject = f"Meeting in room {room}"
    body = f"See you in room {room} today from {s} to {e}."
    d.query(
        [
            'Book room {r} today from {s} to {e}, then email {n} at {a} with the subject "{t}" and the message "{b}"',
            'Reserve room {r} for {s}-{e} today and let {n} ({a}) know by email: subject "{t}", text "{b}"',
        ],
        r=room,
        s=s,
        e=e,
        n=name,
        a=address,
        t=subject,
        b=body,
    )
    d.call("reserve", room_id=room, start_time=s, end_time=e)
    d.call("send", address=address, title=subject, body=body)
    d.answer(f"Booked room {room} from {s} to {e} and emailed {address}.", room, address)


T = Template
TEMPLATES = [
    T("teval.email.send", (EMAIL,), email_send),
    T("teval.email.send_two", (EMAIL,), email_send_two),
    T("teval.email.ask_address", (EMAIL,), email_ask_address),
    T("teval.email.unread_count", (EMAIL,), email_unread_count),
    T("teval.email.latest_from", (EMAIL,), email_latest_from),
    T("teval.email.unread_from", (EMAIL,), email_unread_from),
    T("teval.email.forward", (EMAIL,), email_forward),
    T("teval.email.refuse_delete", (EMAIL,), email_refuse_delete),
    T("teval.email.refuse_send", (EMAIL, FILES), email_refuse_send),
    T("teval.file.todo", (FILES,), file_todo),
    T("teval.file.meeting_notes", (FILES,), file_meeting),
    T("teval.file.report", (FILES,), file_report),
    T("teval.file.sales", (FILES,), file_sales),
    T("teval.file.sales_save", (FILES,), file_sales_save),
    T("teval.file.copy", (FILES,), file_copy),
    T("teval.file.write", (FILES,), file_write),
    T("teval.file.ask_path", (FILES,), file_ask_path),
    T("teval.file.refuse_delete", (FILES,), file_refuse_delete),
    T("teval.file.email_attachment", (EMAIL, FILES), email_attach),
    T("teval.file.email_contents", (EMAIL, FILES), email_note_contents),
    T("teval.arxiv.email_abstract", (ARXIV, EMAIL), paper_email),
    T("teval.arxiv.save_abstract", (ARXIV, FILES), paper_save),
    T("teval.arxiv.paper_deck", (ARXIV, PPT), paper_deck),
    T("teval.arxiv.file_and_email", (ARXIV, FILES, EMAIL), paper_file_email),
    T("teval.ppt.text", (PPT,), ppt_text),
    T("teval.ppt.image", (PPT,), ppt_image),
    T("teval.ppt.ask_theme", (PPT,), ppt_ask_theme),
    T("teval.ppt.refuse_edit", (PPT,), ppt_refuse),
    T("teval.meeting.free_rooms", (MEETING,), meeting_free),
    T("teval.meeting.room_status", (MEETING,), meeting_room_status),
    T("teval.meeting.book_room", (MEETING,), meeting_book_room),
    T("teval.meeting.book_any", (MEETING,), meeting_book_any),
    T("teval.meeting.book_for_people", (MEETING,), meeting_book_for),
    T("teval.meeting.ask_time", (MEETING,), meeting_ask_time),
    T("teval.meeting.refuse", (MEETING,), meeting_refuse),
    T("teval.meeting.email", (MEETING, EMAIL), meeting_email),
]
