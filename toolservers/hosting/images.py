"""Building the images without a registry: a Debian base made here with mmdebstrap, toolgym and
its dependencies as wheels built on the host (`pip wheel`, pinned to the versions installed in
this environment), and every `docker build` run with `network_mode="none"`.

    builder = ImageBuilder(docker.from_env())
    builder.ensure(["toolserver", "mockserver"])   # builds what is missing or out of date

An image is current when its `org.toolgym.source-hash` label equals the hash of what went into
it (Dockerfile, package sources, pyproject, base image id); `ensure` then reuses it. Building
needs a source checkout (pyproject.toml beside the package) and, for the base, root and
mmdebstrap. The GPU variant takes CUDA wheels (`pip wheel` of torch/torchvision from PyPI, about
5.5 GB), so it is built on purpose only (`toolgym lab build toolserver-gpu`), never implicitly.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolgym.toolservers.hosting.base import HostingError, toolgym_root

HASH_LABEL = "org.toolgym.source-hash"
IMAGE_LABEL = "org.toolgym.image"
DEBIAN_SUITE = "bookworm"
DEBIAN_SOURCES = (  # with the updates and security suites: a lab node runs these images for months
    f"deb http://deb.debian.org/debian {DEBIAN_SUITE} main",
    f"deb http://deb.debian.org/debian {DEBIAN_SUITE}-updates main",
    f"deb http://deb.debian.org/debian-security {DEBIAN_SUITE}-security main",
)
BASE_PACKAGES = ("python3", "python3-venv", "ca-certificates")
# documentation, manuals and translations stay out of the rootfs (about a third of its size)
_DPKG_EXCLUDES = (
    "path-exclude=/usr/share/doc/*",
    "path-include=/usr/share/doc/*/copyright",
    "path-exclude=/usr/share/man/*",
    "path-exclude=/usr/share/info/*",
    "path-exclude=/usr/share/locale/*",
)
_SOURCE_DIRS = (
    "toolgym",
    "envs",
    "toolservers",
    "mocks",
    "recorder",
    "evaluation",
    "models",
    "running",
    "reports",
    "authoring",
    "fixtures",
)
_SKIP_PARTS = {"__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"}


@dataclass(frozen=True)
class ImageDef:
    name: str
    tag: str
    requirement: str  # what pip installs from the wheels ("" for the base)
    also: tuple[str, ...] = ()  # packages beside toolgym's own requirements (the CUDA torch pair)
    explicit_only: bool = False  # built only when asked for by name (the GPU variant)
    constraints: str | None = None  # file in docker/server/ pinning extra packages
    target: str | None = None  # the build target in docker/server/Dockerfile


IMAGES: dict[str, ImageDef] = {
    d.name: d
    for d in (
        ImageDef("base", f"toolgym/base:{DEBIAN_SUITE}", ""),
        # the tool server's /mcp face needs the `mcp` extra; the mock server takes the same wheels,
        # so the CPU images share every layer but their last
        ImageDef("toolserver", "toolgym/toolserver:latest", "toolgym[mcp]", target="toolserver"),
        ImageDef("mockserver", "toolgym/mockserver:latest", "toolgym[mcp]", target="mockserver"),
        ImageDef(
            "toolserver-gpu",
            "toolgym/toolserver-gpu:latest",
            "toolgym[gpu,mcp]",
            also=("torch", "torchvision"),
            explicit_only=True,
            constraints="constraints-gpu.txt",
            target="toolserver-gpu",
        ),
    )
}
DEFAULT_IMAGES = ("toolserver", "mockserver")


def repo_root() -> Path:
    """The source checkout toolgym runs from (its images are built from it)."""
    root = toolgym_root()
    if not (root / "pyproject.toml").is_file() or not (root / "docker").is_dir():
        raise HostingError(
            f"building images needs a source checkout of toolgym (pyproject.toml and docker/ "
            f"beside the package); {root} has none"
        )
    return root


def _files(root: Path, names: Iterable[str]) -> Iterator[Path]:
    for name in names:
        top = root / name
        if top.is_file():
            yield top
            continue
        for path in sorted(top.rglob("*")):
            if path.is_file() and not _SKIP_PARTS.intersection(path.parts):
                yield path


def tree_hash(root: Path, names: Iterable[str], extra: Iterable[str] = ()) -> str:
    digest = hashlib.sha256()
    for path in _files(root, names):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    for item in extra:
        digest.update(item.encode() + b"\0")
    return digest.hexdigest()


def _docker_dir(name: str) -> str:
    """docker/base holds the base image; every server image is a target of docker/server."""
    return "server" if IMAGES[name].target else "base"


class BuildError(HostingError):
    """A build step failed; the message has the step's output tail."""


class ImageBuilder:
    """Builds or finds the images. `client` is a `docker.DockerClient`."""

    def __init__(
        self,
        client: Any,
        *,
        build_dir: Path | None = None,
        log: Callable[[str], None] = print,
        python: str | None = None,
    ) -> None:
        self.client = client
        self.root = repo_root()
        self.build_dir = build_dir or self.root / "build" / "docker"
        self.log = log
        self.python = python or sys.executable
        self.timings: dict[str, float] = {}
        self._wheels: dict[str, Path] = {}

    # ---- state --------------------------------------------------------------------------------
    def _image(self, tag: str) -> Any | None:
        import docker.errors

        try:
            return self.client.images.get(tag)
        except docker.errors.ImageNotFound:
            return None

    def source_hash(self, name: str) -> str:
        """What decides whether the image `name` must be rebuilt."""
        d = IMAGES[name]
        docker_files = [f"docker/{_docker_dir(name)}", "docker/healthcheck.py"]
        if name == "base":
            return tree_hash(self.root, docker_files, [*DEBIAN_SOURCES, *BASE_PACKAGES, *_DPKG_EXCLUDES])
        base = self._image(IMAGES["base"].tag)
        base_id = base.id if base is not None else "missing"
        return tree_hash(
            self.root, [*_SOURCE_DIRS, "pyproject.toml", *docker_files], [base_id, d.requirement, *d.also]
        )

    def current(self, name: str) -> bool:
        image = self._image(IMAGES[name].tag)
        return image is not None and image.labels.get(HASH_LABEL) == self.source_hash(name)

    def status(self) -> list[dict[str, Any]]:
        rows = []
        for name, d in IMAGES.items():
            image = self._image(d.tag)
            rows.append(
                {
                    "name": name,
                    "tag": d.tag,
                    "present": image is not None,
                    "current": image is not None and image.labels.get(HASH_LABEL) == self.source_hash(name),
                    "size_mb": round(image.attrs.get("Size", 0) / 1e6) if image is not None else None,
                }
            )
        return rows

    # ---- building -----------------------------------------------------------------------------
    def ensure(self, names: Iterable[str] = DEFAULT_IMAGES, *, rebuild: bool = False) -> dict[str, str]:
        """Build each named image (and the base under it) unless it is current; {name: tag}."""
        wanted = list(names)
        unknown = [n for n in wanted if n not in IMAGES]
        if unknown:
            raise HostingError(f"unknown images {unknown}; known: {sorted(IMAGES)}")
        for name in ["base", *[n for n in wanted if n != "base"]]:
            if (rebuild and name in wanted) or not self.current(name):
                self.build(name)
            else:
                self.log(f"{IMAGES[name].tag}: current")
        return {n: IMAGES[n].tag for n in wanted}

    def build(self, name: str) -> str:
        d = IMAGES[name]
        started = time.monotonic()
        if name == "base":
            context = self._base_context()
        else:
            if self._image(IMAGES["base"].tag) is None:
                self.build("base")
            context = self._toolgym_context(d)
        replaced = self._image(d.tag)
        self._docker_build(d, context, self.source_hash(name))
        built = self._image(d.tag)
        if replaced is not None and built is not None and replaced.id != built.id:
            self._remove_replaced(replaced.id)
        self.timings[name] = time.monotonic() - started
        self.log(f"{d.tag}: built in {self.timings[name]:.1f} s")
        return d.tag

    def _run(self, argv: list[str], what: str, **kwargs: Any) -> None:
        self.log(f"{what}: {' '.join(argv[:4])} ...")
        proc = subprocess.run(argv, capture_output=True, text=True, **kwargs)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-30:])
            raise BuildError(f"{what} failed (exit {proc.returncode}):\n{tail}")

    def rootfs(self) -> Path:
        """The Debian rootfs tarball, made once by mmdebstrap (about a minute, needs root)."""
        out = self.build_dir / "base" / "rootfs.tar"
        stamp = out.with_suffix(".stamp")
        want = "|".join([",".join(BASE_PACKAGES), *_DPKG_EXCLUDES, *DEBIAN_SOURCES])
        if out.is_file() and stamp.is_file() and stamp.read_text() == want:
            return out
        mmdebstrap = shutil.which("mmdebstrap")
        if mmdebstrap is None:
            raise BuildError("the base image needs mmdebstrap: apt-get install -y mmdebstrap")
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = out.with_suffix(".partial.tar")
        argv = [mmdebstrap, "--variant=apt", f"--include={','.join(BASE_PACKAGES)}"]
        argv += [f"--dpkgopt={opt}" for opt in _DPKG_EXCLUDES]
        argv += ['--aptopt=Acquire::Languages "none"', DEBIAN_SUITE, str(partial), *DEBIAN_SOURCES]
        self._run(argv, "mmdebstrap")
        partial.replace(out)
        stamp.write_text(want)
        return out

    def _base_context(self) -> Path:
        context = self.build_dir / "context" / "base"
        self._fresh(context)
        shutil.copy2(self.root / "docker" / "base" / "Dockerfile", context / "Dockerfile")
        os.link(self.rootfs(), context / "rootfs.tar")
        return context

    def constraints(self) -> Path:
        """This environment's installed versions, so the image runs what was tested here."""
        path = self.build_dir / "constraints.txt"
        proc = subprocess.run(
            [self.python, "-m", "pip", "freeze", "--exclude-editable", "--exclude", "toolgym"],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise BuildError(f"pip freeze failed: {proc.stderr[-2000:]}")
        # local versions (torch 2.13.0+cpu) and direct references are not on the index
        lines = [ln for ln in proc.stdout.splitlines() if "==" in ln and "+" not in ln and " @ " not in ln]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
        return path

    def wheels(self, d: ImageDef) -> Path:
        """Wheels of toolgym (in `toolgym/`) and of everything it needs (in `deps/`), built on
        the host into a fresh directory once per builder (pip's cache makes it take seconds),
        so the directory holds exactly one resolution."""
        if d.requirement in self._wheels:
            return self._wheels[d.requirement]
        target = self.build_dir / f"wheels-{d.name}"
        self._fresh(target)
        extras = d.requirement.removeprefix("toolgym")
        argv = [self.python, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check"]
        argv += ["--wheel-dir", str(target / "deps")]
        if d.constraints:
            argv += ["--constraint", str(self.root / "docker" / "server" / d.constraints)]
        else:
            argv += ["--constraint", str(self.constraints())]
        argv += [f"{self.root}{extras}", *d.also]
        self._run(argv, f"pip wheel ({d.name})", cwd=self.build_dir)
        (target / "toolgym").mkdir()
        for whl in (target / "deps").glob("toolgym-*.whl"):
            whl.rename(target / "toolgym" / whl.name)
        self._wheels[d.requirement] = target
        return target

    def _toolgym_context(self, d: ImageDef) -> Path:
        wheels = self.wheels(d)
        context = self.build_dir / "context" / d.name
        self._fresh(context)
        shutil.copy2(self.root / "docker" / "server" / "Dockerfile", context / "Dockerfile")
        shutil.copy2(self.root / "docker" / "healthcheck.py", context / "healthcheck.py")
        for part in ("deps", "toolgym"):
            (context / "wheels" / part).mkdir(parents=True)
            for whl in sorted((wheels / part).glob("*.whl")):
                os.link(whl, context / "wheels" / part / whl.name)
        return context

    def _remove_replaced(self, image_id: str) -> None:
        """The image a build replaced (now untagged); the build stages stay, they are the cache
        that makes the next build fast."""
        import docker.errors

        try:
            self.client.images.remove(image_id, noprune=False)
        except docker.errors.APIError as exc:  # still used by a container: it goes with it
            self.log(f"kept the replaced image {image_id[:19]}: {exc.explanation}")

    @staticmethod
    def _fresh(path: Path) -> None:
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)

    def _docker_build(self, d: ImageDef, context: Path, source_hash: str) -> None:
        self.log(f"{d.tag}: docker build (network_mode=none)")
        stream = self.client.api.build(
            path=str(context),
            tag=d.tag,
            network_mode="none",
            rm=True,
            forcerm=True,
            decode=True,
            labels={HASH_LABEL: source_hash, IMAGE_LABEL: d.name},
            buildargs={"BASE": IMAGES["base"].tag} if d.name != "base" else None,
            target=d.target,
        )
        tail: list[str] = []
        for chunk in stream:
            if "error" in chunk:
                detail = "\n".join(tail[-30:])
                raise BuildError(f"docker build of {d.tag} failed: {chunk['error']}\n{detail}")
            text = str(chunk.get("stream", "")).rstrip()
            if text:
                tail.append(text)
        if self._image(d.tag) is None:
            raise BuildError(f"docker build of {d.tag} reported success but the image is missing")
