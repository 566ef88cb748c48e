"""The `--user-*` options of the commands that can play a task's user with an LLM (`toolgym run`,
`toolgym record`, `toolgym env-server`): their declarations and the one rule they follow (an LLM
user needs both a base URL and a model; a key variable alone is a mistake)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from toolgym.envs.users import UserLLM

# opens the live user LLM (base URL, model, API-key variable); the chat client sits above envs and
# the recorder, so the `toolgym` command hands an opener to the commands at registration
UserLLMOpener = Callable[[str, str, "str | None"], "UserLLM"]

UserModelOption = Annotated[str | None, typer.Option(help="the user LLM's model name")]
UserApiKeyEnvOption = Annotated[
    str | None, typer.Option(help="environment variable holding the user LLM's API key")
]


class UserOptionsError(ValueError):
    """`--user-*` options that do not make an LLM user; `option` is the one to blame, if one is."""

    def __init__(self, problem: str, option: str | None = None) -> None:
        super().__init__(f"{option} {problem}" if option else problem)
        self.problem = problem
        self.option = option


def wants_user_llm(base_url: str | None, model: str | None, api_key_env: str | None) -> bool:
    """True when the options ask for an LLM user, False when none is asked for; half an LLM user
    is a UserOptionsError."""
    if base_url is None and model is None:
        if api_key_env is not None:
            raise UserOptionsError("needs --user-base-url and --user-model", "--user-api-key-env")
        return False
    if not base_url or not model:
        raise UserOptionsError("an LLM user needs both --user-base-url and --user-model")
    return True


def bad_user_options(exc: UserOptionsError) -> typer.BadParameter:
    """The CLI's form of the error."""
    return typer.BadParameter(exc.problem, param_hint=exc.option)
