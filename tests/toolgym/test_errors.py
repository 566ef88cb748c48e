"""The one table between error kinds, exception classes and HTTP statuses."""

from __future__ import annotations

import pytest

from toolgym.errors import (
    ERROR_CLASSES,
    HTTP_STATUS,
    ErrorKind,
    InfraError,
    ToolError,
    ToolTimeout,
    UnknownToolError,
    error_for_kind,
    kind_for_status,
)


@pytest.mark.parametrize("kind", list(ErrorKind))
def test_every_kind_has_one_class_and_one_status(kind: ErrorKind) -> None:
    assert ERROR_CLASSES[kind].kind is kind
    assert 400 <= HTTP_STATUS[kind] < 600
    raised = error_for_kind(kind.value, "m", data={"x": 1})
    assert type(raised) is ERROR_CLASSES[kind] and raised.message == "m" and raised.data == {"x": 1}


def test_a_kind_from_a_newer_server_falls_back() -> None:
    assert type(error_for_kind("brand_new_kind", "m")) is ToolError
    assert type(error_for_kind("brand_new_kind", "m", default=InfraError)) is InfraError
    assert type(error_for_kind(ErrorKind.UNKNOWN_TOOL, "m")) is UnknownToolError


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, ErrorKind.TOOL_ERROR),
        (404, ErrorKind.TOOL_ERROR),  # a bare 404 of some REST API is the tool's failure
        (401, ErrorKind.INFRA_ERROR),
        (429, ErrorKind.INFRA_ERROR),
        (408, ErrorKind.TIMEOUT),
        (504, ErrorKind.TIMEOUT),
        (422, ErrorKind.ARGUMENT_ERROR),
        (500, ErrorKind.INFRA_ERROR),
        (503, ErrorKind.INFRA_ERROR),
    ],
)
def test_bare_statuses_read_as_kinds(status: int, kind: ErrorKind) -> None:
    assert kind_for_status(status) is kind


def test_the_servers_answer_with_the_table() -> None:
    from toolgym.toolservers.server.runtime import STATUS_BY_KIND

    served = dict(STATUS_BY_KIND)
    assert served.pop(None) == 200 and served == HTTP_STATUS
    assert isinstance(error_for_kind(ErrorKind.TIMEOUT, "slow"), ToolTimeout)


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        (
            "UnidentifiedImageError: cannot identify image file '/tmp/toolgym-files-x1/ab/abcd'",
            "UnidentifiedImageError: cannot identify image file '<server path>'",
        ),
        ('File "/usr/lib/python3.11/json/decoder.py", line 3', 'File "<server path>", line 3'),
        ("OSError: /home/me/.cache/model.onnx missing", "OSError: <server path> missing"),
        ("speed in km/h, ratio 1/0, see http://host/a/b", "speed in km/h, ratio 1/0, see http://host/a/b"),
        ("no file 'file:abc' on this server", "no file 'file:abc' on this server"),
    ],
)
def test_redact_paths(text: str, redacted: str) -> None:
    from toolgym.errors import redact_paths

    assert redact_paths(text) == redacted
