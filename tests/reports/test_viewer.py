"""The trace viewer, in a real headless browser (Debian's chromium driven by Playwright).

Two real runs feed it: the oracle on two demo tasks, on two worker processes as `toolgym run
--workers 2` runs them (one draws a box on a receipt: an image observation, sent back by its worker) and an LLM agent against a local OpenAI-compatible server (tests/evaluation/
fake_openai.py), whose traces keep the requests it sent; one of its episodes calls an unknown tool
and answers wrongly (model errors), the other meets a server that answers 503 (aborted: infra).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, sync_playwright

from tests.models.fake_openai import FakeOpenAI, Fault, Reply, calls, serve, text
from toolgym.envs.demo import demo_tasks_path, mock_task_paths
from toolgym.envs.rollouts import ProcessExecutor
from toolgym.envs.tool_env import ToolEnv
from toolgym.models.llm import ChatClient, LLMAgent, LLMConfig
from toolgym.reports.viewer import (
    collect_view_data,
    payload_json,
    render_viewer,
    serve_viewer,
    write_viewer,
)
from toolgym.running.trials import run_trials
from toolgym.tasks import Task, TaskSet

CHROMIUM = Path("/usr/bin/chromium")
needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="Debian's chromium is not installed at /usr/bin/chromium (apt-get install chromium)",
)
FISH_OIL = "family of 5"
RECEIPT = "How much did I pay in total"
CANCEL = "ctool-express-cancel-002"
WRONG_ANSWER = "<b>It lasts 60 days</b>"  # markup from a model: shown as text, never rendered


@dataclass(frozen=True)
class Runs:
    oracle: Path
    llm: Path
    tasks: dict[str, Task]
    sent: list[dict[str, Any]]  # the requests the model server received, in order


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    root = tmp_path_factory.mktemp("viewer")
    demo = TaskSet.load(demo_tasks_path())
    picked = TaskSet(
        [demo["mark-total"], demo["fish-oil-days"], demo["receipt-total"]], base_dir=demo.base_dir
    )
    oracle = TaskSet([demo["mark-total"], demo["fish-oil-days"]], base_dir=demo.base_dir)
    ctool_path = next(p for p in mock_task_paths() if p.stem == "ctool")
    ctool = TaskSet([TaskSet.load(ctool_path)[CANCEL]], base_dir=ctool_path.parent)  # changes app state
    run_trials(
        [("demo", oracle), ("ctool", ctool)],
        "oracle",
        out=root / "oracle",
        agent_name="oracle",
        executor=ProcessExecutor(2, batch_size=1),  # `--workers 2`: the image comes from a worker
    )
    script: dict[str, list[Reply | Fault]] = {
        FISH_OIL: [
            calls(("Nope", {})),
            calls(("OCR", {"image": "image/fish_oil.png"})),
            text(WRONG_ANSWER),
        ],
        RECEIPT: [Fault(status=503)],
    }
    with serve(FakeOpenAI(script)) as fake:
        config = LLMConfig(base_url=fake.base_url, model="fake-model", max_retries=0)
        with ChatClient(config) as client:

            def agent(env: ToolEnv, trial: int) -> LLMAgent:
                return LLMAgent(client, env)

            summary = run_trials(
                [("demo", TaskSet([demo["fish-oil-days"], demo["receipt-total"]], base_dir=demo.base_dir))],
                agent,
                out=root / "llm",
                protocol="openai",
                agent_name="llm:fake-model",
            )
        sent = list(fake.requests)
    assert [e.status for e in summary.episodes] == ["terminated", "aborted"]
    return Runs(root / "oracle", root / "llm", {t.id: t for t in [*picked, *ctool]}, sent)


@contextmanager
def browser() -> Iterator[tuple[Page, list[str]]]:
    """A page in headless chromium, and the console errors and uncaught exceptions it meets."""
    errors: list[str] = []
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            page = chromium.new_page()
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            yield page, errors
        finally:
            chromium.close()


def shown_tasks(page: Page) -> list[str]:
    return [t.strip() for t in page.locator("#episodes td.task").all_text_contents()]


def episode_id(page: Page, source: str, task_id: str) -> str:
    row = page.locator("#episodes tr.row").filter(
        has=page.locator("td.source", has_text=re.compile(f"^{source}$"))
    )
    found = row.filter(has=page.locator("td.task", has_text=re.compile(f"^{task_id}$")))
    assert found.count() == 1
    ident = found.get_attribute("data-id")
    assert ident is not None
    return ident


def no_stray_text(page: Page) -> bool:
    """The view is made of elements only: no bare text (a 'null' left by a missing part)."""
    return bool(page.evaluate("[...document.getElementById('app').childNodes].every(n => n.nodeType === 1)"))


def pick(page: Page, name: str, value: str) -> None:
    page.select_option(f"#filter-{name}", value)


@needs_chromium
def test_served_viewer_lists_filters_and_shows_episodes_step_by_step(runs: Runs) -> None:
    with serve_viewer([runs.oracle, runs.llm], runs.tasks) as url, browser() as (page, errors):
        assert url.startswith("http://127.0.0.1:")
        page.goto(url)
        assert sorted(shown_tasks(page)) == [
            CANCEL,
            "fish-oil-days",
            "fish-oil-days",
            "mark-total",
            "receipt-total",
        ]
        assert no_stray_text(page)
        check_filters(page)
        check_produced_image(page, runs)
        check_state_diff(page, url)
        check_llm_episode(page, url, runs)
        # the aborted episode: an infra error, with why it stopped
        page.goto(url)
        page.click(f"#episodes tr.row[data-id='{episode_id(page, 'llm', 'receipt-total')}'] td.task")
        page.wait_for_selector(".summary")
        assert "infra: aborted" in page.locator(".outcome").inner_text()
        assert "503" in page.locator(".summary").inner_text()
        assert errors == []


def check_filters(page: Page) -> None:
    """Each filter (passed, error kind: model vs infra and one kind, category, run, task) narrows
    the list, and lives in the page's link."""
    pick(page, "passed", "false")
    assert sorted(shown_tasks(page)) == ["fish-oil-days", "receipt-total"]
    pick(page, "passed", "")
    pick(page, "kind", "infra")
    assert shown_tasks(page) == ["receipt-total"]
    pick(page, "kind", "unknown_tool")
    assert shown_tasks(page) == ["fish-oil-days"]
    pick(page, "kind", "none")
    assert sorted(shown_tasks(page)) == [CANCEL, "fish-oil-days", "mark-total"]
    pick(page, "kind", "")
    pick(page, "category", "perception+operation")
    assert shown_tasks(page) == ["mark-total"]
    pick(page, "category", "")
    pick(page, "source", "llm")
    assert sorted(shown_tasks(page)) == ["fish-oil-days", "receipt-total"]
    pick(page, "source", "")
    page.fill("#filter-task", "receipt")
    page.press("#filter-task", "Enter")
    assert shown_tasks(page) == ["receipt-total"]
    assert "passed=" not in page.url and "task=receipt" in page.url  # filters live in the link
    page.fill("#filter-task", "")
    page.press("#filter-task", "Enter")


def check_produced_image(page: Page, runs: Runs) -> None:
    """The oracle's mark-total: DrawBox's image inline, the very bytes the tool produced in its
    worker process."""
    page.click(f"#episodes tr.row[data-id='{episode_id(page, 'oracle', 'mark-total')}'] td.task")
    page.wait_for_selector(".summary")
    image = page.locator("section.step[data-step='2'] img.obs")
    assert image.count() == 1
    assert page.eval_on_selector(
        "section.step[data-step='2'] img.obs", "i => i.complete && i.naturalWidth > 0"
    )
    src = image.get_attribute("src")
    assert src is not None and src.startswith("data:image/png;base64,")
    trace_line = (runs.oracle / "trial-0/demo/mark-total.seed0.jsonl").read_text().splitlines()[2]
    sha = json.loads(trace_line)["observations"][0]["files"][0]["sha256"]
    assert hashlib.sha256(base64.b64decode(src.split(",", 1)[1])).hexdigest() == sha
    assert "reward: 1.0" in page.locator(".outcome").inner_text()
    assert page.locator(".latency").first.inner_text() == "step – ms"  # the oracle's traces keep none
    assert page.locator(".request").count() == 0  # and no request: the oracle asks no model
    assert no_stray_text(page)


def check_state_diff(page: Page, url: str) -> None:
    """A mock app's state change: the diff, between the state hashes."""
    page.goto(url)
    page.click(f"#episodes tr.row[data-id='{episode_id(page, 'oracle', CANCEL)}'] td.task")
    page.wait_for_selector(".summary")
    diffs = page.locator("pre.diff")
    assert diffs.count() >= 1
    changed = json.loads(diffs.first.inner_text())
    assert changed["express_shipments"]["changed"][0]["after"]["cancel_reason"]
    # its milestones, derived from the golden chain and scored again from the trace's calls
    assert "milestones and minefields\nmilestones 100%" in page.locator(".summary").inner_text()


def check_llm_episode(page: Page, url: str, runs: Runs) -> None:
    """The LLM's fish-oil-days: the requests it sent, raw output with latency, errors by kind."""
    page.goto(url)
    page.click(f"#episodes tr.row[data-id='{episode_id(page, 'llm', 'fish-oil-days')}'] td.task")
    page.wait_for_selector(".summary")
    steps = page.locator("section.step")
    assert steps.count() == 3
    first = page.locator("section.step[data-step='1'] details.request")
    assert first.get_attribute("open") is not None
    request_text = first.inner_text()
    assert runs.sent[0]["messages"][0]["content"].splitlines()[0] in request_text  # the system prompt
    assert {t["function"]["name"] for t in runs.sent[0]["tools"]} == {
        "OCR",
        "Calculator",
        "ask_user",
        "no_call",
    }
    assert '"name": "Calculator"' in request_text  # the tool schemas sent
    third = page.locator("section.step[data-step='3'] details.request")
    assert third.locator("summary").inner_text().endswith("6 messages, 4 tools (2 new)")  # reply, tool result
    third.locator("summary").click()
    assert third.locator(".msg").count() == len(runs.sent[2]["messages"])
    assert re.fullmatch(r"model \d+(\.\d)? ms", page.locator(".model-latency").first.inner_text())
    assert re.fullmatch(r"step \d+(\.\d)? ms", page.locator(".latency").first.inner_text())
    assert "model: unknown_tool" in page.locator("section.step[data-step='1'] h3").inner_text()
    assert json.loads(page.locator("pre.raw").nth(2).inner_text())["content"] == WRONG_ANSWER
    assert page.locator("main b", has_text="It lasts 60 days").count() == 0  # not rendered as markup
    assert '"name": "OCR"' in page.locator("section.step[data-step='2'] pre.actions").inner_text()


@needs_chromium
def test_two_episodes_side_by_side_mark_the_steps_that_differ(runs: Runs) -> None:
    # the same run twice stands for golden vs replay (identical); the oracle vs the LLM differ
    with serve_viewer([runs.oracle, runs.llm, runs.oracle], runs.tasks) as url, browser() as (page, errors):
        page.goto(url)
        oracle = episode_id(page, "oracle", "fish-oil-days")
        llm = episode_id(page, "llm", "fish-oil-days")
        replay = episode_id(page, re.escape("oracle (2)"), "fish-oil-days")
        page.check(f"input.pick[data-id='{oracle}']")
        page.check(f"input.pick[data-id='{llm}']")
        page.click("#compare")
        page.wait_for_selector(".columns")
        assert page.url.endswith(f"#/compare/{oracle}/{llm}")
        assert page.locator(".columns .column").count() == 2
        assert page.locator("#diff-note").inner_text() == "steps that differ: 1, 2, 3"
        assert page.locator(f".column[data-id='{llm}'] section.step").count() == 3
        assert page.locator("section.step.differs").count() == 6  # 3 steps a side, all differing
        page.goto(f"{url}#/episode/{oracle}")
        page.click(f"a.pair[href='#/compare/{oracle}/{replay}']")
        page.wait_for_selector(".columns")
        assert (
            page.locator("#diff-note").inner_text() == "every step is the same (actions, observations, state)"
        )
        assert page.locator("section.step.differs").count() == 0
        assert errors == []


@needs_chromium
def test_exported_page_is_self_contained(runs: Runs, tmp_path: Path) -> None:
    out = write_viewer(
        collect_view_data([runs.oracle, runs.llm], runs.tasks, title="two runs"), tmp_path / "v.html"
    )
    with browser() as (page, errors):
        fetched: list[str] = []
        page.on("request", lambda r: fetched.append(r.url))
        page.goto(out.as_uri())
        assert page.title() == "two runs"
        assert len(shown_tasks(page)) == 5
        page.goto(out.as_uri() + "#/episode/" + episode_id(page, "oracle", "mark-total"))
        assert page.eval_on_selector("img.obs", "i => i.complete && i.naturalWidth > 0")
        assert [u for u in fetched if not u.startswith(("file:", "data:"))] == []  # nothing from a network
        assert errors == []


def test_payload_escapes_markup_and_names_missing_images(runs: Runs, tmp_path: Path) -> None:
    assert "</script>" not in payload_json({"raw": "</script><script>alert(1)</script>"})
    assert json.loads(payload_json({"raw": "</script>"})) == {"raw": "</script>"}
    payload = collect_view_data([runs.oracle], runs.tasks)
    assert len(payload["images"]) == 1
    page = render_viewer(payload)
    assert (
        page.count("<script") == 2
        and "</script><" not in page.split('id="payload">', 1)[1].split("</script>")[0]
    )
    # the kept files gone: the episode still shows, its image named as not kept
    moved = tmp_path / "oracle"
    subprocess.run(["cp", "-r", str(runs.oracle), str(moved)], check=True)
    subprocess.run(["rm", "-r", str(moved / "trial-0/demo/files")], check=True)
    assert collect_view_data([moved], runs.tasks)["images"] == {}


def test_view_command_exports_and_serves_on_loopback(runs: Runs, tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "200"}
    target = tmp_path / "view.html"
    done = subprocess.run(
        [sys.executable, "-m", "toolgym.cli", "view", str(runs.oracle), "--export", str(target)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "3 episodes" in done.stdout and target.read_text().startswith("<!DOCTYPE html>")
    missing = subprocess.run(
        [sys.executable, "-m", "toolgym.cli", "view", str(tmp_path / "nowhere")],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert missing.returncode == 2 and "is not a directory" in missing.stderr
    # faulthandler: a server that does not stop on Ctrl-C is made to say where it hangs (SIGABRT)
    server = subprocess.Popen(
        [sys.executable, "-X", "faulthandler", "-m", "toolgym.cli", "view", str(runs.oracle)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert found, line
        page = httpx.get(found.group(0), timeout=30)
        assert page.status_code == 200 and "mark-total" in page.text
        assert httpx.get(found.group(0) + "other", timeout=30).status_code == 404
    finally:
        server.send_signal(signal.SIGINT)
        try:
            out, err = server.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            server.send_signal(signal.SIGABRT)
            out, err = server.communicate(timeout=30)
            pytest.fail(f"toolgym view did not stop on SIGINT; where it was:\n{err[-6000:]}")
    assert server.returncode == 0 and "viewer stopped" in out, err
    assert server.returncode == 0


def _ignore_and_block_sigint() -> None:  # what a shell's background job or a busy parent hands down
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_view_stops_on_a_signal_it_was_started_ignoring(runs: Runs, stop: signal.Signals) -> None:
    server = subprocess.Popen(
        [sys.executable, "-m", "toolgym.cli", "view", str(runs.oracle)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        preexec_fn=_ignore_and_block_sigint,
    )
    try:
        assert server.stdout is not None
        assert "trace viewer on http://127.0.0.1:" in server.stdout.readline()
        server.send_signal(stop)
        out, err = server.communicate(timeout=30)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert server.returncode == 0 and "viewer stopped" in out, err


def test_viewer_beyond_loopback_needs_a_token_and_a_login(runs: Runs) -> None:
    from toolgym.http import Credentials, InsecureBindError

    with (
        pytest.raises(InsecureBindError, match="beyond loopback"),
        serve_viewer([runs.oracle], runs.tasks, host="0.0.0.0"),
    ):
        pass
    token = "viewer-token-0123456789"
    credentials = Credentials({"default": token})
    with serve_viewer([runs.oracle], runs.tasks, host="0.0.0.0", credentials=credentials) as url:
        # a viewer on every interface asks every client for the token, loopback's too: the test
        # speaks to it over 127.0.0.1 (tests never send traffic to the machine's outward address)
        there = url.replace("0.0.0.0", "127.0.0.1")
        with httpx.Client(base_url=there, timeout=60) as client:
            assert client.get("/").status_code == 401  # no trace leaves without the token
            assert client.get("/login", params={"token": "wrong-token-0123456789"}).status_code == 401
            login = client.get("/login", params={"token": token})
            assert login.status_code == 303 and login.headers["location"] == "/"
            cookie = login.headers["set-cookie"].lower()
            assert "httponly" in cookie and "samesite=strict" in cookie
            page = client.get("/")  # the cookie the login set
            assert page.status_code == 200 and "<html" in page.text.lower()
            assert client.get("/", headers={"host": "evil.example"}).status_code == 421
        bearer = httpx.get(there, headers={"Authorization": f"Bearer {token}"}, timeout=60)
        assert bearer.status_code == 200


def test_the_login_cookie_is_a_derived_value_never_the_token() -> None:
    """The login's cookie holds an HMAC of the token under the server's own secret: the token is
    nowhere in Set-Cookie, the cookie logs the browser in, and any other value does not (the raw
    token, another server's cookie for the same token, a value one character off)."""
    from toolgym.http import Credentials

    token = "viewer-token-0123456789"
    credentials = Credentials({"default": token})
    with (
        serve_viewer([], {}, credentials=credentials) as url,
        serve_viewer([], {}, credentials=credentials) as other_url,
        httpx.Client(base_url=url, timeout=60) as browser,
    ):
        login = browser.get("/login", params={"token": token})
        assert login.status_code == 303
        set_cookie = login.headers["set-cookie"]
        assert token not in set_cookie
        name, _, value = set_cookie.split(";", 1)[0].partition("=")
        assert re.fullmatch(r"[0-9a-f]{64}", value), set_cookie
        flags = {flag.strip().lower() for flag in set_cookie.split(";")[1:]}
        assert "httponly" in flags and "samesite=strict" in flags
        page = browser.get("/")  # the cookie the login set
        assert page.status_code == 200 and "<html" in page.text.lower()
        other = httpx.get(f"{other_url}login", params={"token": token}, timeout=60)
        other_value = other.cookies[name]
        assert other_value != value  # each server its own secret
        off_by_one = value[:-1] + ("0" if value[-1] != "0" else "1")
        for forged in (token, other_value, off_by_one, "0" * 64):
            refused = httpx.get(url, headers={"cookie": f"{name}={forged}"}, timeout=60)
            assert refused.status_code == 401, forged
        assert httpx.get(url, headers={"cookie": f"{name}={value}"}, timeout=60).status_code == 200


def test_view_refuses_an_open_bind_without_a_token(runs: Runs) -> None:
    result = subprocess.run(
        [
            str(Path(sys.executable).with_name("toolgym")),
            "view",
            str(runs.oracle),
            "--host",
            "0.0.0.0",
            "--port",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TOOLGYM_TOKEN": ""},
    )
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "beyond loopback" in result.stderr


@needs_chromium
def test_a_dynamic_episode_shows_its_timeline_events_and_notifications(tmp_path: Path) -> None:
    """A world that moves (tests/envs/dynamic_fixture.py's task, a scripted agent): the episode's
    timeline lists the fired events (id, simulated time, the app calls they made, their
    notification) and the agent's steps at their clocks; each step's card shows its clock, its
    events and the notification among its observations."""
    from tests.envs import dynamic_fixture as dyn
    from toolgym.envs.agents import ScriptedAgent
    from toolgym.envs.runner import run_episode

    task = dyn.dynamic_task()
    env = ToolEnv(tasks=[task], protocol="openai")
    run_episode(env, ScriptedAgent(env.protocol, dyn.actions()), task, seed=0, trace_dir=tmp_path / "run")
    env.close()
    reminder = f"Notification (2024-01-01T00:00:10+00:00): {dyn.REMINDER}"
    reply = f"Notification (2024-01-01T00:05:10+00:00): {dyn.reply_text(dyn.friends()[1])}"
    with serve_viewer([tmp_path / "run"], {task.id: task}) as url, browser() as (page, errors):
        page.goto(url)
        page.click(f"#episodes tr.row[data-id='{episode_id(page, 'run', dyn.TASK_ID)}'] td.task")
        page.wait_for_selector("#timeline")
        rows = [
            [cell.strip() for cell in row.locator("td").all_inner_texts()]
            for row in page.locator("#timeline tr.event, #timeline tr.agent-step").all()
        ]
        cells = [row[:3] for row in rows]
        assert cells == [
            ["2024-01-01T00:00:10+00:00", "1", "event reminder"],
            ["2024-01-01T00:00:10+00:00", "1", "the agent's step: send_message"],
            ["2024-01-01T00:05:10+00:00", "2", "event reply"],
            ["2024-01-01T00:05:10+00:00", "2", "the agent's step: wait"],
            ["2024-01-01T00:05:20+00:00", "3", "the agent's step: final_answer"],
        ]
        assert rows[0][3:] == ["no calls", reminder]
        assert "send_message" in rows[2][3] and dyn.ANSWER_TEXT in rows[2][3] and rows[2][4] == reply
        first, second = (
            page.locator("section.step[data-step='1']"),
            page.locator("section.step[data-step='2']"),
        )
        assert first.locator(".clock").inner_text() == "clock 2024-01-01T00:00:10+00:00"
        assert first.locator(".msg.notification pre").inner_text() == reminder
        assert second.locator(".msg.notification pre").inner_text() == reply
        assert second.locator("table.events tr.event").get_attribute("data-event") == "reply"
        assert no_stray_text(page)
        assert errors == []
