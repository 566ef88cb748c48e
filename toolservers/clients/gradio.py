"""Tools from a Gradio app's API, through `gradio_client`.

    tools = gradio_tools("http://127.0.0.1:7860/")     # every named endpoint: "/predict" -> "predict"

Only http(s) URLs of running apps are accepted (a Hugging Face Space name would make the client
call the Hub). Each named endpoint becomes a SchemaTool: parameters from the endpoint's JSON
Schema; file components (Image, File, Audio, ...) become file parameters, uploaded from the
episode's file store; file outputs are downloaded into it. `gr.Error` and other failures the app
reports are tool errors; a connection that fails is an infra error.
"""

from __future__ import annotations

import importlib
import mimetypes
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from toolgym.errors import InfraError, ToolError
from toolgym.files import FileHandle, StoredFile
from toolgym.tools import SCHEMA_PARAM_TYPES, ParamType, ReturnSpec, SchemaTool, ToolContext, ToolSet

from ._common import bearer, store_bytes

_IMAGE_COMPONENTS = frozenset({"Image", "AnnotatedImage", "ImageEditor", "ImageSlider", "Sketchpad"})


def _quiet_environment() -> None:
    # the client would otherwise report usage to outside servers; tests and benchmarks must
    # talk to loopback only, so telemetry is off unless the user turned it on explicitly
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


def _gradio(module: str = "gradio_client") -> Any:
    # gradio_client ships no type information; imported on use (it is a test/dev dependency)
    return importlib.import_module(module)


def _is_file(info: Mapping[str, Any]) -> bool:
    schema = info.get("type")
    return isinstance(schema, dict) and bool(_gradio("gradio_client.utils").value_is_file(schema))


def _kind(info: Mapping[str, Any]) -> ParamType:
    if _is_file(info):
        return "image" if info.get("component") in _IMAGE_COMPONENTS else "file"
    schema = info.get("type")
    kind = schema.get("type") if isinstance(schema, dict) else None
    return SCHEMA_PARAM_TYPES.get(kind, "text") if isinstance(kind, str) else "text"


def _param_name(info: Mapping[str, Any], index: int) -> str:
    name = info.get("parameter_name") or info.get("label") or f"input_{index}"
    return re.sub(r"\W+", "_", str(name)).strip("_") or f"input_{index}"


class GradioToolSet(ToolSet):
    def __init__(
        self,
        url: str,
        *,
        endpoints: Iterable[str] | None = None,
        token: str | None = None,
        headers: Mapping[str, str] | None = None,
        prefix: str = "",
    ) -> None:
        super().__init__()
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"give the URL of a running Gradio app, not {url!r}")
        _quiet_environment()
        Client = _gradio().Client

        self.url = url
        self._downloads = Path(tempfile.mkdtemp(prefix="toolgym-gradio-"))
        try:
            self._client = Client(
                url,
                verbose=False,
                headers=bearer(token, headers),
                download_files=str(self._downloads),
                analytics_enabled=False,
            )
            info = self._client.view_api(return_format="dict", print_info=False)
        except Exception as exc:
            shutil.rmtree(self._downloads, ignore_errors=True)
            raise InfraError(f"cannot read the Gradio app at {url}: {type(exc).__name__}: {exc}") from None
        assert isinstance(info, dict)
        named: dict[str, Any] = info.get("named_endpoints", {})
        wanted = (
            [e if e.startswith("/") else f"/{e}" for e in endpoints] if endpoints is not None else list(named)
        )
        missing = [e for e in wanted if e not in named]
        if missing:
            self.close()
            raise InfraError(f"{url} has no endpoints {missing}; it has {sorted(named)}")
        for api_name in wanted:
            self.add(
                self._make_tool(prefix + api_name.strip("/").replace("/", "_"), api_name, named[api_name])
            )

    def _make_tool(self, name: str, api_name: str, endpoint: Mapping[str, Any]) -> SchemaTool:
        params = list(endpoint.get("parameters", []))
        names = [_param_name(p, i) for i, p in enumerate(params)]
        properties: dict[str, Any] = {}
        required: list[str] = []
        for pname, p in zip(names, params, strict=True):
            kind = _kind(p)
            if kind in ("image", "file"):
                schema: dict[str, Any] = {"type": "string", "format": kind}
            else:
                schema = {
                    k: v
                    for k, v in dict(p.get("type") or {}).items()
                    if k not in ("title", "additional_description")
                }
            label = p.get("label")
            if label and label != pname and not str(label).startswith("parameter_"):
                schema["description"] = str(label)
            if p.get("parameter_has_default"):
                schema["default"] = p.get("parameter_default")
            else:
                required.append(pname)
            properties[pname] = schema
        outputs = list(endpoint.get("returns", []))
        returns = [ReturnSpec(type=_kind(r), description=r.get("label")) for r in outputs]
        file_outputs = [_is_file(r) for r in outputs]

        def run(arguments: dict[str, Any], ctx: ToolContext) -> Any:
            return self._call(name, api_name, names, arguments, file_outputs, ctx)

        return SchemaTool(
            name,
            {"type": "object", "properties": properties, "required": required},
            run,
            description=str(endpoint.get("description") or f"Gradio endpoint {api_name} of {self.url}"),
            returns=returns,
            backend="gradio",
        )

    def _call(
        self,
        name: str,
        api_name: str,
        names: list[str],
        arguments: dict[str, Any],
        file_outputs: list[bool],
        ctx: ToolContext,
    ) -> Any:
        handle_file = _gradio().handle_file
        AppError = _gradio("gradio_client.exceptions").AppError

        staging = Path(tempfile.mkdtemp(prefix="in-", dir=self._downloads))
        try:
            kwargs = {}
            for pname in names:
                if pname not in arguments:
                    continue
                value = arguments[pname]
                if isinstance(value, StoredFile):
                    value = handle_file(str(_staged_copy(value, staging)))
                kwargs[pname] = value
            try:
                result = self._client.predict(api_name=api_name, **kwargs)
            except AppError as exc:  # the app rejected the input or failed on it
                raise ToolError(f"{name}: {exc}") from None
            except Exception as exc:
                raise InfraError(f"{name} at {self.url}: {type(exc).__name__}: {exc}") from None
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        values = list(result) if len(file_outputs) > 1 and isinstance(result, (tuple, list)) else [result]
        decoded = [
            self._fetch(v, ctx) if is_file and isinstance(v, str) else v
            for v, is_file in zip(values, file_outputs or [False], strict=False)
        ]
        return decoded if len(file_outputs) > 1 else decoded[0]

    def _fetch(self, path: str, ctx: ToolContext) -> FileHandle:
        local = Path(path)
        try:
            data = local.read_bytes()
        except OSError as exc:
            raise InfraError(f"the Gradio client did not deliver an output file: {exc}") from None
        media = mimetypes.guess_type(local.name)[0] or "application/octet-stream"
        handle = store_bytes(ctx, data, name=local.name, media_type=media)
        if local.is_relative_to(self._downloads):
            shutil.rmtree(local.parent, ignore_errors=True)  # the episode's store keeps it now
        return handle

    def close(self) -> None:
        client = getattr(self, "_client", None)
        if client is not None:
            client.close()
        shutil.rmtree(self._downloads, ignore_errors=True)

    def __enter__(self) -> GradioToolSet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _staged_copy(stored: StoredFile, staging: Path) -> Path:
    """The file under a name with its extension (the store's blobs have none; Gradio reads the
    type from the name)."""
    name = Path(stored.handle.name or "file").name
    if not Path(name).suffix:
        name += mimetypes.guess_extension(stored.handle.media_type) or ""
    target = staging / name
    shutil.copyfile(stored.path, target)
    return target


def gradio_tools(
    url: str,
    *,
    endpoints: Iterable[str] | None = None,
    token: str | None = None,
    headers: Mapping[str, str] | None = None,
    prefix: str = "",
) -> GradioToolSet:
    """The named API endpoints of the Gradio app at `url` as tools."""
    return GradioToolSet(url, endpoints=endpoints, token=token, headers=headers, prefix=prefix)
