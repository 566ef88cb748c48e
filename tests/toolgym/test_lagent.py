"""lagent's ReAct parse as GTA's pipeline runs it (lagent 0.2.x ReActProtocol.parse and
JsonParser): each expectation below follows from lagent's substring and regex rules."""

from __future__ import annotations

import pytest

from toolgym.protocols.lagent import (
    FINISH_ACTION,
    NO_ACTION,
    LagentParse,
    lagent_json_input,
    lagent_parse,
    lagent_render,
)


def test_a_call_with_its_thought() -> None:
    parsed = lagent_parse('Thought: read it\nAction: OCR\nAction Input: {"image": "a.png"}')
    assert parsed == LagentParse(" read it\n", "OCR", '{"image": "a.png"}')


def test_final_answer_anywhere_wins_and_the_last_one_counts() -> None:
    # "Final Answer:" is looked for before any Action; the answer is the text after its last
    # occurrence, unstripped
    reply = 'Action: Calculator\nAction Input: {"expression": "1+1"}\nFinal Answer: 2\nFinal Answer: two'
    assert lagent_parse(reply) == LagentParse("", FINISH_ACTION, " two")
    assert lagent_parse("Final Answer: 58").action_input == " 58"


def test_two_action_blocks_give_the_last_name_and_the_first_input_onwards() -> None:
    reply = (
        'Action: Calculator\nAction Input: {"expression": "1"}\nAction: OCR\nAction Input: {"image": "x"}\n'
    )
    parsed = lagent_parse(reply)
    assert parsed.action == "OCR"
    assert parsed.action_input == '{"expression": "1"}\nAction: OCR\nAction Input: {"image": "x"}'
    with pytest.raises(ValueError):  # JSON with extra data: an argument error downstream
        lagent_json_input(parsed.action_input)


@pytest.mark.parametrize(
    "reply",
    [
        "The bottle lasts 58 days.",  # prose
        "Action: OCR",  # the Action line needs a newline after it
        "Action: OCR\n",  # no Action Input
        'action: OCR\naction input: {"image": "x"}',  # the markers are case-sensitive
        "final answer: 58",
        "FinalAnswer: 58",
    ],
)
def test_no_action(reply: str) -> None:
    assert lagent_parse(reply).action == NO_ACTION
    assert lagent_parse(reply).action_input == ""


def test_input_is_stripped_of_quotes_and_a_json_fence() -> None:
    assert lagent_parse('Action: Calculator\nAction Input: "1 + 1"').action_input == "1 + 1"
    assert lagent_json_input('```json\n{"a": 1}\n```') == {"a": 1}
    assert lagent_json_input("[1, 2]") == [1, 2]  # any JSON value; the executor decides
    for bad in ("{'a': 1}", "290 / 5", '```\n{"a": 1}\n```'):
        with pytest.raises(ValueError):
            lagent_json_input(bad)


def test_render_parses_back() -> None:
    text = lagent_render("DrawBox", {"image": "a.png", "bbox": "(1, 2, 3, 4)"}, thought="box it")
    parsed = lagent_parse(text)
    assert parsed.action == "DrawBox"
    assert lagent_json_input(parsed.action_input) == {"image": "a.png", "bbox": "(1, 2, 3, 4)"}
