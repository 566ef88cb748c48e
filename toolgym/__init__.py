"""toolgym: a tool-serving sandbox and environment simulator for LLM agents."""

from toolgym import moved
from toolgym.actions import Action, AskUser, FinalAnswer, NoCall, Observation, ToolCall
from toolgym.envs.rewards import Episode, EpisodeStep, answer_reward, task_scores
from toolgym.envs.tool_env import ToolEnv
from toolgym.errors import ErrorKind, ToolError
from toolgym.files import FileHandle, FileStore, StoredFile
from toolgym.tasks import AnswerSpec, GoldenStep, Task, TaskFile, TaskSet
from toolgym.tools import File, Image, Param, Tool, ToolContext, ToolSet, tool
from toolgym.trace import Trace

moved.install()  # the paths issue 35 moved (toolgym.evaluation.llm, ...) keep working

__all__ = [
    "Action",
    "AnswerSpec",
    "AskUser",
    "Episode",
    "EpisodeStep",
    "ErrorKind",
    "File",
    "FileHandle",
    "FileStore",
    "FinalAnswer",
    "GoldenStep",
    "Image",
    "NoCall",
    "Observation",
    "Param",
    "StoredFile",
    "Task",
    "TaskFile",
    "TaskSet",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolEnv",
    "ToolError",
    "ToolSet",
    "Trace",
    "answer_reward",
    "task_scores",
    "tool",
]
