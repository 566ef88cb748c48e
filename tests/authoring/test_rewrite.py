"""The optional rewriter of generated queries (authoring/rewrite.py) against a real OpenAI-compatible
server on 127.0.0.1 (tests/models/fake_openai.py): a rephrasing that keeps what the golden chain
needs replaces the query and still passes toolgym check; one that loses an id, adds one or says
what the user is to be asked for does not; the calls are recorded in a cassette, and a replay of it
with no server gives the same tasks."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.models.fake_openai import FakeOpenAI, Reply, serve, text
from toolgym.authoring.check import check_tasks
from toolgym.authoring.generate import dump, generate, task_problems
from toolgym.authoring.rewrite import Rewriter, needed_values, rejection
from toolgym.authoring.templates.banking import TEMPLATES
from toolgym.models.llm import ChatClient, LLMConfig
from toolgym.models.users import ChatUserLLM
from toolgym.recorder.cassette import Cassette

CHOSEN = ("banking.balance", "banking.transfer", "banking.pay_bill_ask_customer")


def _tasks() -> list[Any]:
    templates = [t for t in TEMPLATES if t.name in CHOSEN]
    return generate([], 9, seed=0, templates=templates, jobs=1).tasks


def _query(body: Mapping[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


def polite(body: Mapping[str, Any]) -> Reply:
    return text(f"Hello! {_query(body)} Thanks a lot.")


def careless(body: Mapping[str, Any]) -> Reply:
    query = _query(body)
    if "CUST-" not in query and "ACC-" in query:
        return text("Could you look at my account for me?")  # the account number is lost
    return text(query.replace("Please pay", "Pay") + " I'm CUST-0001.")  # names an id it was not given


def _rewriter(fake: FakeOpenAI, cassette: Cassette) -> Rewriter:
    client = ChatClient(LLMConfig(base_url=fake.base_url, model="fake-model", timeout_s=20, max_retries=0))
    return Rewriter(ChatUserLLM(client, label="rewriter"), "fake-model", cassette)


def test_a_faithful_rephrasing_replaces_the_query_and_replays_from_the_cassette(tmp_path: Path) -> None:
    tasks = _tasks()
    tape = tmp_path / "rewrites.cassette"
    with serve(FakeOpenAI(script=polite)) as fake:
        recorded = _rewriter(fake, Cassette(tape, "record")).rewrite(tasks, task_problems)
        assert len(fake.requests) == len(tasks)
    assert recorded.kept == len(tasks) and not recorded.reasons
    assert all(t.query.startswith("Hello! ") for t in recorded.tasks)
    assert [t.id for t in recorded.tasks] == [t.id for t in tasks]
    assert check_tasks(recorded.tasks) == []

    class NoModel:
        def chat(self, messages: object, *, seed: int | None) -> str:
            raise AssertionError("a replay asks no model")

    replayed = Rewriter(NoModel(), "fake-model", Cassette(tape, "replay")).rewrite(tasks, task_problems)
    assert dump(replayed.tasks) == dump(recorded.tasks)


def test_a_rephrasing_that_loses_or_adds_an_id_keeps_the_original(tmp_path: Path) -> None:
    tasks = _tasks()
    with serve(FakeOpenAI(script=careless)) as fake:
        result = _rewriter(fake, Cassette(tmp_path / "c.cassette", "record")).rewrite(tasks, task_problems)
    assert result.kept == 0
    assert dump(result.tasks) == dump(tasks)
    assert set(result.reasons) <= {"loses what the golden chain needs", "names an id the query did not"}
    assert len(set(result.reasons)) == 2


def test_what_a_rephrasing_must_keep() -> None:
    tasks = {t.metadata["template"]: t for t in _tasks()}
    transfer = tasks["banking.transfer"]
    needed = needed_values(transfer)
    arguments = transfer.golden[0].action.arguments
    assert arguments["from_account_id"] in needed and arguments["to_account_id"] in needed
    assert rejection(transfer, transfer.query, set()) == "no new wording"
    assert rejection(transfer, "Move some money around.", set()) == "loses what the golden chain needs"
    assert rejection(transfer, "x", {"x"}) == "the set has this query already"
    ask = tasks["banking.pay_bill_ask_customer"]
    assert ask.user is not None
    secret = ask.user.known["customer_id"]
    assert rejection(ask, f"{ask.query} (customer {secret})", set()) == "names an id the query did not"


def test_what_a_small_model_writes_instead_of_a_rephrasing_is_refused() -> None:
    # each of these came from SmolLM2-135M-Instruct behind `toolgym serve-model` (kept before)
    tasks = {t.metadata["template"]: t for t in _tasks()}
    balance, ask = tasks["banking.balance"], tasks["banking.pay_bill_ask_customer"]
    account = balance.golden[0].action.arguments["account_id"]
    assert rejection(balance, f"The balance of my account {account} is 1.000000000000001.", set()) == (
        "says a number the query did not"
    )
    sorry = "I'm sorry for any confusion. I'm an AI designed to assist with financial matters."
    assert rejection(ask, sorry, set()) == "answers instead of asking"
    assert rejection(ask, ask.query.replace("my", "your"), set()) == "speaks to the user, not as the user"
    assert rejection(ask, "Please pay a bill from my checking account, thanks.", set()) == (
        "drops a name the query said"
    )
    assert balance.answer is not None and balance.answer.whitelist
    answer = balance.answer.whitelist[0][0]
    assert rejection(balance, f"Is the balance of my account {account} still {answer}?", set()) == (
        "says a number the query did not"
    )
    # a faithful one passes
    assert rejection(balance, f"How much money is in my account {account}?", set()) is None
