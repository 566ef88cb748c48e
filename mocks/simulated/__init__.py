"""Simulated tools: any tool given only its documentation, answered by a simulator.

- `docs`: the documentation formats (OpenAI function records, ToolBench, T-Eval, MTU, OpenAPI)
  read into `ToolDoc`s, with load errors that name the file and the tool;
- `simulator`: the `Simulator` interface, `DeterministicSimulator` (default, no LLM) and
  `LLMSimulator` (a chat model, injected);
- `values`: realistic values from Faker, drawn by a seeded hash;
- `app`: a library of simulated tools as a mock app (state in the world's store), and the
  registry of libraries ("simulated:<library>": registered or bundled).

The guide: docs/simulated-tools.md.
"""

from toolgym.mocks.simulated.app import (
    SimulatedApp,
    bundled_libraries,
    get_simulated_app,
    register_library,
    simulated_app,
)
from toolgym.mocks.simulated.docs import DocError, ToolDoc, load_docs, parse_docs
from toolgym.mocks.simulated.simulator import (
    DETERMINISTIC,
    LLM,
    ChatModel,
    DeterministicSimulator,
    LLMSimulator,
    SimCall,
    Simulator,
)

__all__ = [
    "DETERMINISTIC",
    "LLM",
    "ChatModel",
    "DeterministicSimulator",
    "DocError",
    "LLMSimulator",
    "SimCall",
    "SimulatedApp",
    "Simulator",
    "ToolDoc",
    "bundled_libraries",
    "get_simulated_app",
    "load_docs",
    "parse_docs",
    "register_library",
    "simulated_app",
]
