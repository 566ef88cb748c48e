"""MathOCR: the offline rules backend on formulas typeset by matplotlib's mathtext (exact LaTeX
expected), the Unicode-to-LaTeX mapping, the Mathpix backend against a real HTTP server on
127.0.0.1 that speaks Mathpix's API, and a tiny VisionEncoderDecoder through the real loader."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import matplotlib
import pytest

from toolgym.actions import Observation, ToolCall
from toolgym.errors import ErrorKind
from toolgym.files import FileStore
from toolgym.tools import ToolContext, ToolSet
from toolgym.toolservers.gta.config import ModelConfig
from toolgym.toolservers.gta.mathocr import (
    RulesMathOCR,
    make_mathocr_tool,
    mathocr_backends,
    select_mathocr,
    to_latex,
)

matplotlib.use("Agg")


def typeset(tex: str, path: Path, size: int = 28) -> Path:
    """A formula typeset by matplotlib's mathtext (DejaVu fonts), black on white, as PNG."""
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(0.01, 0.01))
    fig.text(0, 0, f"${tex}$", fontsize=size)
    fig.savefig(path, dpi=100, bbox_inches="tight", pad_inches=0.2, facecolor="white")
    plt.close(fig)
    return path


def run(tools: ToolSet, image: Path) -> Observation:
    files = FileStore()
    files.put_path(image, name="image/formula.png")
    return tools.call(
        ToolCall(name="MathOCR", arguments={"image": "image/formula.png"}), ToolContext(files=files)
    )


@pytest.fixture(scope="module")
def rules() -> ToolSet:
    return ToolSet([make_mathocr_tool(ModelConfig())])


@pytest.mark.parametrize(
    ("tex", "latex"),
    [
        ("3x + 5 = 20", "3x+5=20"),
        ("x^2 + 3x - 4 = 0", "x^{2}+3x-4=0"),
        ("a^{2} + b^{2} = c^{2}", "a^{2}+b^{2}=c^{2}"),
        ("x_1 + x_2 = 10", "x_{1}+x_{2}=10"),
        (r"2 \times 3 \div 4 = 1.5", r"2\times3\div4=1.5"),
        (r"x \leq 5", r"x\leq5"),
        (r"\pi r^2", r"\pi r^{2}"),
        (r"\alpha + \beta = 90^\circ", r"\alpha+\beta=90^{\circ}"),
        (r"\sin(x) + \cos(y)", r"\sin(x)+\cos(y)"),
        (r"y = \sqrt{x + 1}", r"y=\sqrt{x+1}"),
        (r"\sqrt{16} = 4", r"\sqrt{16}=4"),
        (r"x = \frac{-b}{2a}", r"x=\frac{-b}{2a}"),
        (r"\frac{1}{2} + \frac{1}{3} = \frac{5}{6}", r"\frac{1}{2}+\frac{1}{3}=\frac{5}{6}"),
    ],
)
def test_rules_backend_reads_printed_formulas(rules: ToolSet, tmp_path: Path, tex: str, latex: str) -> None:
    obs = run(rules, typeset(tex, tmp_path / "f.png"))
    assert obs.error is None, obs.text
    assert obs.text == latex


def test_rules_backend_reads_two_lines_top_to_bottom(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(3, 1.4))
    fig.text(0.05, 0.6, r"$y = 2x - 7$", fontsize=24)
    fig.text(0.05, 0.1, r"$x = \frac{1}{2}$", fontsize=24)
    path = tmp_path / "two.png"
    fig.savefig(path, dpi=100, facecolor="white")
    plt.close(fig)
    assert RulesMathOCR().recognize(path) == "y=2x-7\n" + r"x=\frac{1}{2}"


def test_blank_and_broken_images(rules: ToolSet, tmp_path: Path) -> None:
    from PIL import Image as PILImage

    PILImage.new("RGB", (120, 60), "white").save(tmp_path / "blank.png")
    obs = run(rules, tmp_path / "blank.png")
    assert (
        obs.error is not None and obs.error.kind == ErrorKind.TOOL_ERROR and "no formula" in obs.error.message
    )
    (tmp_path / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n garbage")
    obs = run(rules, tmp_path / "broken.png")
    assert (
        obs.error is not None
        and obs.error.kind == ErrorKind.TOOL_ERROR
        and "cannot read image" in obs.error.message
    )


@pytest.mark.parametrize(
    ("text", "latex"),
    [
        ("x²+y²=r²", "x^{2}+y^{2}=r^{2}"),
        ("x₁₀", "x_{10}"),
        ("a×b÷c", r"a\times b\div c"),
        ("√(x+1)", r"\sqrt{x+1}"),
        ("√16−4", r"\sqrt{16}-4"),
        ("2πr", r"2\pi r"),
        ("sinx+cos(y)", r"sinx+\cos(y)"),
        ("log(x)", r"\log(x)"),
        ("1十2一3", "1+2-3"),
        ("ａ＝ｂ", "a=b"),
        ("x ≥ 0, y ≠ 1", r"x\geq0,y\neq1"),
        ("90°", r"90^{\circ}"),
        ("Δx→0", r"\Delta x\rightarrow0"),
    ],
)
def test_to_latex(text: str, latex: str) -> None:
    assert to_latex(text) == latex


# ---- Mathpix -----------------------------------------------------------------------------------------
class FakeMathpix(BaseHTTPRequestHandler):
    """Mathpix's v3/text endpoint: checks the app id/key headers, parses the multipart upload."""

    requests: ClassVar[list[dict[str, Any]]] = []
    reply: ClassVar[tuple[int, Any]] = (200, {})

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        message = BytesParser(policy=HTTP).parsebytes(
            b"Content-Type: " + self.headers["Content-Type"].encode() + b"\r\n\r\n" + body
        )
        parts = {p.get_param("name", header="content-disposition"): p for p in message.iter_parts()}
        FakeMathpix.requests.append(
            {
                "app_id": self.headers.get("app_id"),
                "app_key": self.headers.get("app_key"),
                "options": json.loads(parts["options_json"].get_content()),
                "file": parts["file"].get_content(),
            }
        )
        status, payload = FakeMathpix.reply
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def mathpix() -> Iterator[str]:
    FakeMathpix.requests.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeMathpix)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v3/text"
    server.shutdown()
    server.server_close()


def mathpix_tools(url: str) -> ToolSet:
    env = {
        "TOOLGYM_MATHOCR_BACKEND": "mathpix",
        "MATHPIX_APP_ID": "app",
        "MATHPIX_APP_KEY": "key",
        "TOOLGYM_MATHPIX_URL": url,
    }
    return ToolSet([make_mathocr_tool(ModelConfig.from_env(env))])


def test_mathpix_upload_and_answer(mathpix: str, tmp_path: Path) -> None:
    image = typeset("E = mc^2", tmp_path / "f.png")
    FakeMathpix.reply = (200, {"latex_styled": "E=m c^{2}", "text": "\\( E=m c^{2} \\)"})
    obs = run(mathpix_tools(mathpix), image)
    assert obs.error is None and obs.text == "E=m c^{2}"
    (request,) = FakeMathpix.requests
    assert (request["app_id"], request["app_key"]) == ("app", "key")
    assert request["options"] == {"math_inline_delimiters": ["$", "$"], "rm_spaces": True}
    assert request["file"] == image.read_bytes()


def test_mathpix_failures(mathpix: str, tmp_path: Path) -> None:
    image = typeset("x", tmp_path / "f.png")
    FakeMathpix.reply = (200, {"error": "Image is too small", "error_info": {"id": "image_too_small"}})
    obs = run(mathpix_tools(mathpix), image)
    assert (
        obs.error is not None and obs.error.kind == ErrorKind.TOOL_ERROR and "too small" in obs.error.message
    )
    FakeMathpix.reply = (401, {"error": "Invalid credentials"})
    obs = run(mathpix_tools(mathpix), image)
    assert obs.error is not None and obs.error.kind == ErrorKind.INFRA_ERROR and "401" in obs.error.message
    FakeMathpix.reply = (200, b"not json")
    obs = run(mathpix_tools(mathpix), image)
    assert obs.error is not None and obs.error.kind == ErrorKind.INFRA_ERROR
    obs = run(mathpix_tools("http://127.0.0.1:9/v3/text"), image)
    assert obs.error is not None and obs.error.kind == ErrorKind.INFRA_ERROR


def test_backend_selection() -> None:
    def chosen(env: dict[str, str]) -> str:
        config = ModelConfig.from_env(env)
        return select_mathocr(config, mathocr_backends(config)).name

    assert chosen({}) == "rules"
    assert chosen({"MATHPIX_APP_ID": "a", "MATHPIX_APP_KEY": "b"}) == "rules"  # keys alone send nothing out
    assert chosen({"TOOLGYM_MATHOCR_BACKEND": "mathpix"}) == "mathpix"
    tool = make_mathocr_tool(ModelConfig.from_env({"TOOLGYM_MATHOCR_BACKEND": "model"}))
    files = FileStore()
    buf = io.BytesIO()
    from PIL import Image as PILImage

    PILImage.new("RGB", (10, 10)).save(buf, format="PNG")
    files.put_bytes(buf.getvalue(), name="image/x.png")
    obs = ToolSet([tool]).call(
        ToolCall(name="MathOCR", arguments={"image": "image/x.png"}), ToolContext(files=files)
    )
    assert obs.error is not None and "TOOLGYM_MATHOCR_MODEL" in obs.error.message
    with pytest.raises(ValueError, match="TOOLGYM_MATHOCR_BACKEND"):
        ModelConfig.from_env({"TOOLGYM_MATHOCR_BACKEND": "wolfram"})


def test_local_model_backend_with_a_tiny_vision_encoder_decoder(tmp_path: Path) -> None:
    pytest.importorskip(
        "torch", reason="torch is not installed: pip install -c constraints.txt 'toolgym[ml]'"
    )
    pytest.importorskip("transformers", reason="transformers is not installed: pip install 'toolgym[ml]'")
    from tests.toolservers.tiny_models import build_vision_encoder_decoder

    model = build_vision_encoder_decoder(tmp_path / "mathocr")
    config = ModelConfig.from_env({"TOOLGYM_MODELS_DIR": str(tmp_path)})  # found at the default place
    assert select_mathocr(config, mathocr_backends(config)).name == "model"
    tools = ToolSet([make_mathocr_tool(config)])
    image = typeset("x^2", tmp_path / "f.png")
    obs = run(tools, image)
    assert obs.error is None, obs.text
    assert obs.text == "x x x x"  # what the (biased) model writes, up to its own token limit
    assert model == tmp_path / "mathocr"
