"""What every metric of the metric suites means, and which paper it comes from: printed by
`toolgym eval --explain` and written into each report (the report's metric names link to it).

Metric names with a `/` (`plan/trace`, `step/tool_call`) are the base metric on a part of the
data; `glossary_entry` finds them under their base name.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Paper:
    title: str
    url: str


GTA = Paper(
    "GTA: A Benchmark for General Tool Agents (Wang et al., NeurIPS 2024)", "https://arxiv.org/abs/2407.08713"
)
TEVAL = Paper(
    "T-Eval: Evaluating the Tool Utilization Capability of LLMs Step by Step (Chen et al., ACL 2024)",
    "https://arxiv.org/abs/2312.14033",
)
MTU = Paper(
    "MTU-Bench: A Multi-granularity Tool-Use Benchmark (Wang et al., ICLR 2025)",
    "https://arxiv.org/abs/2410.11710",
)
TOOLEYES = Paper(
    "ToolEyes: Fine-Grained Evaluation for Tool Learning Capabilities of LLMs (Ye et al., COLING 2025)",
    "https://arxiv.org/abs/2401.00741",
)
CTOOLEVAL = Paper(
    "CToolEval: A Chinese Benchmark for LLM-Powered Agent Evaluation (Guo et al., ACL Findings 2024)",
    "https://aclanthology.org/2024.findings-acl.928/",
)
TOOLGYM = Paper("toolgym (docs/evaluation.md)", "docs/evaluation.md")


@dataclass(frozen=True)
class Metric:
    name: str
    suite: str
    definition: str
    paper: Paper


METRICS: tuple[Metric, ...] = (
    # GTA: step-by-step mode (teacher forcing) and end-to-end mode
    Metric(
        "InstAcc", "gta", "instruction following: share of steps whose output parses as a valid action", GTA
    ),
    Metric("ToolAcc", "gta", "tool selection: share of tool steps that call the golden step's tool", GTA),
    Metric(
        "ArgAcc", "gta", "argument accuracy: share of tool steps whose arguments match the golden ones", GTA
    ),
    Metric("SummAcc", "gta", "answer summary: similarity of the final-answer step to the golden answer", GTA),
    Metric("AnsAcc", "gta", "answer accuracy of end-to-end episodes with an objective answer", GTA),
    Metric("Ans+I", "gta", "answer accuracy counting image-generation queries too (AnsAcc with images)", GTA),
    Metric(
        "P_F1",
        "gta",
        "F1 of the perception tools called against the golden chain's (OCR, captions, ...)",
        GTA,
    ),
    Metric("O_F1", "gta", "F1 of the operation tools called (draw box, add text, ...)", GTA),
    Metric("L_F1", "gta", "F1 of the logic tools called (calculator, solver, search, ...)", GTA),
    Metric("C_F1", "gta", "F1 of the creativity tools called (text to image, stylization, ...)", GTA),
    Metric(
        "step",
        "gta",
        "counts of the step mode: tasks, steps with a golden tool, tool calls, failed calls",
        GTA,
    ),
    # T-Eval: one score per capability, each from its own prompt format
    Metric(
        "instruct",
        "teval",
        "instruction following: the reply is in the asked format with the right tool and arguments",
        TEVAL,
    ),
    Metric(
        "plan",
        "teval",
        "planning: similarity of the planned tool chain to the golden one (matched calls, F1)",
        TEVAL,
    ),
    Metric(
        "reason", "teval", "reasoning: similarity of the predicted next thought to the golden thought", TEVAL
    ),
    Metric("retrieve", "teval", "retrieval: share of steps that name the golden tool", TEVAL),
    Metric(
        "understand",
        "teval",
        "understanding: similarity of the predicted arguments to the golden ones",
        TEVAL,
    ),
    Metric(
        "review", "teval", "review: share of tool responses judged correctly as success or failure", TEVAL
    ),
    Metric(
        "overall", "teval", "the mean of the capabilities scored (ToolEyes: of its five dimensions)", TEVAL
    ),
    # MTU-Bench
    Metric("TS", "mtu", "tool selection accuracy of single-turn items (ToolEyes: tool selection score)", MTU),
    Metric("PS", "mtu", "parameter selection accuracy of single-turn items", MTU),
    Metric(
        "TN", "mtu", "tool number accuracy: the calls made match the golden calls in number and name", MTU
    ),
    Metric("TO", "mtu", "tool order accuracy: the calls come in the golden order", MTU),
    Metric("AVG", "mtu", "the mean of the split's two accuracies (TS and PS, or TN and TO)", MTU),
    Metric("SR", "mtu", "success rate: share of dialogs (or tasks) whose every turn succeeds", MTU),
    Metric("ATS", "mtu", "averaged turn success: mean share of successful turns per dialog", MTU),
    Metric(
        "SATS",
        "mtu",
        "soft averaged turn success: turns after a failure count partly, recovering over turns",
        MTU,
    ),
    Metric("TPR", "mtu", "task process rate: share of a dialog's turns done before its first failure", MTU),
    # ToolEyes
    Metric(
        "IF", "tooleyes", "format alignment: share of replies in the required thought/action format", TOOLEYES
    ),
    Metric(
        "IU",
        "tooleyes",
        "intent comprehension (judged, 1-10 rescaled): the replies address what the user asked",
        TOOLEYES,
    ),
    Metric(
        "BP",
        "tooleyes",
        "behaviour planning (judged): the thoughts plan sound, consistent next steps",
        TOOLEYES,
    ),
    Metric(
        "AO",
        "tooleyes",
        "answer organisation (judged): the final answer uses the tool results and answers the query",
        TOOLEYES,
    ),
    Metric(
        "tool_reality",
        "tooleyes",
        "share of calls to tools and parameters that exist (no hallucinated ones)",
        TOOLEYES,
    ),
    Metric("tool_hallucinations", "tooleyes", "number of calls to tools that do not exist", TOOLEYES),
    Metric(
        "param_hallucinations", "tooleyes", "number of calls with parameters the tool does not have", TOOLEYES
    ),
    # CToolEval
    Metric(
        "ToolMatch", "ctooleval", "tool matching rate: share of the golden tools the agent called", CTOOLEVAL
    ),
    Metric(
        "FixedAnswerAcc",
        "ctooleval",
        "answer accuracy of fixed-answer tasks (keywords found, none forbidden)",
        CTOOLEVAL,
    ),
    Metric(
        "OpSuccess",
        "ctooleval",
        "operational success: every golden operation was called and the API reported success",
        CTOOLEVAL,
    ),
    Metric(
        "RealTimeAcc",
        "ctooleval",
        "real-time answers: the answer reports the values the API returned in the episode",
        CTOOLEVAL,
    ),
    Metric("NoToolAcc", "ctooleval", "no-tool tasks answered without calling any tool", CTOOLEVAL),
    Metric("TaskSuccess", "ctooleval", "share of tasks whose kind-specific check passed", CTOOLEVAL),
    # milestones and minefields (toolgym.envs.milestones; the idea is Apple's ToolSandbox's)
    Metric(
        "milestone_progress",
        "milestones",
        "how far an episode got: the best order-respecting match of the task's milestones to its steps, "
        "total similarity over the number of milestones",
        TOOLGYM,
    ),
    Metric("all_milestones", "milestones", "episodes that reached every milestone fully", TOOLGYM),
    Metric(
        "minefield_episodes",
        "milestones",
        "episodes that brought about a fact the task forbids (a minefield), among tasks with minefields",
        TOOLGYM,
    ),
    Metric("minefield_hits", "milestones", "minefields an episode hit (each zeroes its reward)", TOOLGYM),
    # toolgym's own episode scores (run.json, report)
    Metric(
        "reward",
        "toolgym",
        "the episode reward: 1 when the answer (and the expected state, if any) is right",
        TOOLGYM,
    ),
    Metric(
        "answer",
        "toolgym",
        "the final answer matches the task's expected answer (whitelist/blacklist, numbers)",
        TOOLGYM,
    ),
    Metric("state", "toolgym", "the mock apps reached the task's expected final state", TOOLGYM),
    Metric(
        "pass@k",
        "toolgym",
        "chance that at least one of k trials succeeds (tau-bench's unbiased estimator)",
        TOOLGYM,
    ),
    Metric("pass^k", "toolgym", "chance that all k trials succeed (tau-bench's estimator)", TOOLGYM),
)


def glossary_entry(name: str, suite: str | None = None) -> Metric | None:
    """The entry of a metric as results name it (`plan/trace` is `plan` on traces)."""
    base = name.split("/")[0].split(":")[0]
    found = [m for m in METRICS if m.name == base]
    for metric in found:
        if suite is None or metric.suite == suite:
            return metric
    return found[0] if found else None


def anchor(name: str) -> str:
    """The report's HTML id of a metric's glossary entry."""
    return "metric-" + "".join(c if c.isalnum() else "-" for c in name)


def glossary_text() -> str:
    """The glossary as plain text, one metric per line, grouped by suite with its paper."""
    lines: list[str] = []
    suite = ""
    for metric in METRICS:
        if metric.suite != suite:
            suite = metric.suite
            lines += ["", f"{suite}: {metric.paper.title} <{metric.paper.url}>"]
        lines.append(f"  {metric.name:<22} {metric.definition}")
    lines += [
        "",
        "fixed mode corrects the original scorers (docs/evaluation.md); compat reproduces their numbers.",
    ]
    return "\n".join(lines).lstrip("\n")
