"""Vocabulary for the synthetic research papers of ArxivSearch and GoogleScholar: fields with their
tasks and methods, title and abstract templates, researcher names and venues. Every paper is made
from these by the apps' seeders; nothing here is a real paper."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Final

from toolgym.mocks.seeding import person_name

# field: (arXiv category, tasks, methods, datasets or settings)
FIELDS: Final[dict[str, tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...]]]] = {
    "computation and language": (
        "cs.CL",
        (
            "machine translation",
            "question answering",
            "text summarization",
            "named entity recognition",
            "dialogue generation",
            "sentiment analysis",
            "tool learning",
            "code generation",
        ),
        (
            "large language models",
            "transformers",
            "retrieval-augmented generation",
            "instruction tuning",
            "in-context learning",
            "reinforcement learning from human feedback",
            "chain-of-thought prompting",
        ),
        ("multilingual benchmarks", "low-resource languages", "long documents", "open-domain settings"),
    ),
    "computer vision": (
        "cs.CV",
        (
            "image segmentation",
            "object detection",
            "image generation",
            "video understanding",
            "3D reconstruction",
            "optical character recognition",
        ),
        (
            "diffusion models",
            "vision transformers",
            "convolutional networks",
            "self-supervised learning",
            "neural radiance fields",
        ),
        ("autonomous driving scenes", "medical images", "satellite imagery", "everyday photos"),
    ),
    "machine learning": (
        "cs.LG",
        (
            "graph classification",
            "time series forecasting",
            "federated learning",
            "continual learning",
            "anomaly detection",
        ),
        (
            "graph neural networks",
            "variational autoencoders",
            "meta-learning",
            "bayesian optimization",
            "mixture of experts",
        ),
        ("non-stationary data", "edge devices", "tabular data", "noisy labels"),
    ),
    "physics": (
        "quant-ph",
        (
            "quantum error correction",
            "dark matter detection",
            "superconductivity",
            "gravitational wave detection",
            "exoplanet atmospheres",
            "topological insulators",
        ),
        (
            "tensor networks",
            "monte carlo simulation",
            "density functional theory",
            "variational quantum eigensolvers",
            "spectroscopy",
        ),
        ("cold atom experiments", "space telescopes", "thin films", "superconducting qubits"),
    ),
    "mathematics": (
        "math.NT",
        ("prime gaps", "elliptic curves", "convex optimization", "random matrices", "knot invariants"),
        ("spectral methods", "probabilistic methods", "algebraic geometry", "combinatorial bounds"),
        ("finite fields", "high dimensions", "sparse graphs", "modular forms"),
    ),
    "quantitative biology": (
        "q-bio.QM",
        ("protein folding", "gene regulatory networks", "epidemic spreading", "neural coding"),
        ("deep learning", "stochastic models", "sequence alignment", "agent-based models"),
        ("single-cell data", "population surveys", "cortical recordings", "microbial communities"),
    ),
    "quantitative finance": (
        "q-fin.PM",
        ("portfolio optimization", "option pricing", "market microstructure", "credit risk"),
        ("stochastic volatility models", "deep hedging", "reinforcement learning", "copulas"),
        ("emerging markets", "high-frequency data", "cryptocurrency markets", "corporate bonds"),
    ),
    "statistics": (
        "stat.ME",
        ("causal inference", "high-dimensional regression", "survival analysis", "conformal prediction"),
        ("bayesian nonparametrics", "bootstrap methods", "variational inference", "kernel methods"),
        ("observational studies", "clinical trials", "missing data", "small samples"),
    ),
    "electrical engineering": (
        "eess.SP",
        ("speech enhancement", "beamforming", "power grid control", "radar signal processing"),
        ("deep learning", "sparse recovery", "model predictive control", "adaptive filtering"),
        ("noisy environments", "microgrids", "millimeter-wave arrays", "hearing aids"),
    ),
    "economics": (
        "econ.GN",
        ("labor markets", "auction design", "inflation expectations", "trade policy"),
        ("structural estimation", "difference-in-differences", "machine learning", "game-theoretic models"),
        ("developing economies", "online platforms", "household surveys", "firm-level data"),
    ),
}
TITLES: Final = (
    "{Method} for {Task}",
    "Towards Robust {Task} with {Method}",
    "Scaling {Method} for {Task} in {Setting}",
    "A Survey of {Method} in {Task}",
    "On the Limits of {Method} for {Task}",
    "Rethinking {Task}: A {Method} Perspective",
    "Efficient {Task} via {Method}",
    "{Method} Meet {Task}: Lessons from {Setting}",
)
FINDINGS: Final = (
    "improves {metric} by {gain}% over strong baselines",
    "matches the state of the art while using {gain}% less compute",
    "reduces error by {gain}% relative to prior work",
    "generalizes to unseen conditions with a {gain}% smaller gap",
)
METRICS: Final = ("accuracy", "F1", "calibration", "sample efficiency", "robustness", "mean squared error")
FIRST_NAMES: Final = (
    "Ada",
    "Bo",
    "Carlos",
    "Dana",
    "Elena",
    "Feng",
    "Gita",
    "Hassan",
    "Ingrid",
    "Jun",
    "Kavya",
    "Lars",
    "Mei",
    "Nikolai",
    "Olu",
    "Priya",
    "Quentin",
    "Rui",
    "Sofia",
    "Tomas",
    "Uma",
    "Viktor",
    "Wen",
    "Xin",
    "Yara",
    "Zoltan",
    "Aiko",
    "Ben",
    "Chloe",
    "Dmitri",
)
LAST_NAMES: Final = (
    "Zhang",
    "Smith",
    "Garcia",
    "Okafor",
    "Muller",
    "Rossi",
    "Tanaka",
    "Kowalski",
    "Silva",
    "Brown",
    "Nguyen",
    "Patel",
    "Kim",
    "Ivanova",
    "Haddad",
    "Larsen",
    "Chen",
    "Moreau",
    "Novak",
    "Fischer",
    "Sato",
    "Li",
    "Wang",
    "Johnson",
    "Kumar",
)
AFFILIATIONS: Final = (
    "Northgate University",
    "Lakeside Institute of Technology",
    "University of Eastbridge",
    "Westfield Research Lab",
    "Harborview University",
    "Institute for Advanced Computation",
    "Summit AI Research",
    "Riverside College",
    "Central Academy of Sciences",
    "Polytechnic of Southport",
)
VENUES: Final = (
    "Journal of Machine Learning Research",
    "Transactions on Pattern Analysis",
    "Physical Review Letters",
    "Annals of Statistics",
    "Journal of Finance",
    "Nature Communications",
    "Proceedings of the ACL",
    "Conference on Computer Vision",
    "Bioinformatics",
    "Econometrica",
    "IEEE Transactions on Signal Processing",
    "Advances in Neural Information Processing Systems",
)


@dataclass(frozen=True)
class Paper:
    field: str
    category: str
    title: str
    summary: str
    task: str
    method: str


def _cap(text: str) -> str:
    return " ".join(w[:1].upper() + w[1:] for w in text.split())


def make_paper(rng: random.Random, field: str | None = None) -> Paper:
    """One synthetic paper: a title and an abstract that agree on the task, method and setting."""
    field = field or rng.choice(sorted(FIELDS))
    category, tasks, methods, settings = FIELDS[field]
    task, method, setting = rng.choice(tasks), rng.choice(methods), rng.choice(settings)
    title = rng.choice(TITLES).format(Method=_cap(method), Task=_cap(task), Setting=_cap(setting))
    finding = rng.choice(FINDINGS).format(metric=rng.choice(METRICS), gain=rng.randint(3, 40))
    summary = (
        f"We study {task} in {setting} using {method}. "
        f"Existing approaches to {task} struggle when data from {setting} is scarce or shifts over time. "
        f"We propose a {rng.choice(('simple', 'principled', 'scalable', 'modular'))} approach built on {method} "
        f"and evaluate it on {rng.randint(3, 12)} benchmarks, where it {finding}."
    )
    return Paper(field, category, title, summary, task, method)


def person(rng: random.Random) -> str:
    return person_name(rng, FIRST_NAMES, LAST_NAMES)
