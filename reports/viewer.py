"""The trace viewer: one run's episodes (or several runs', side by side) as an interactive page.

`collect_view_data` reads trace folders (run directories, golden folders, replays) into one JSON
payload; `render_viewer` puts it in a single HTML page with its script and style inline, so the
page works as a served page (`serve_viewer`, `toolgym view RUN_DIR`) and as a file
(`toolgym view RUN_DIR --export FILE`) alike, with no network.

The page lists the episodes with filters (task, passed, error kind, category, run), shows one
episode step by step (the request sent to the model, rebuilt from the deltas a trace keeps; the
raw output and its latency; parsed actions; observations, with the images tools produced inline
as data URIs; state diffs; faults; the reward and scores) and two episodes side by side, steps
aligned, differing steps marked (golden vs replay, two agents). Errors are told apart as the
run's infrastructure's (`infra_error`, an aborted episode) or the model's (every other kind). An
episode of a world that moves (`toolgym.mocks.events`) shows its timeline in simulated time: each
step's clock, the events that fired in it (id, time, the apps' calls they made, whether they
notified) and the notifications the agent got, beside its steps; each step's card shows them too.

Everything in traces came from models, tools and task files: the payload is embedded as JSON
with `<` escaped, and the script writes it into the page as text only (never as markup).
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from toolgym.envs.milestones import NotScored, trace_milestones
from toolgym.envs.runner import FILES_DIR
from toolgym.errors import ErrorKind
from toolgym.evaluation.base import is_teacher_forced
from toolgym.files import write_atomically
from toolgym.http import BearerCookie, CookieLogins, Credentials, Exposure, ServerThread, secure
from toolgym.running.trials import (
    EpisodeRecord,
    LoadedTrace,
    load_traces,
    read_run_summary,
    records_from_traces,
)
from toolgym.tasks import Task
from toolgym.trace import Trace, full_requests

INFRA_KINDS = frozenset({ErrorKind.INFRA_ERROR.value, "aborted"})  # not the model's fault
MAX_IMAGE_BYTES = 8 * 1024 * 1024  # a bigger file is named, not embedded


@dataclass(frozen=True)
class ViewSource:
    """A trace folder shown in the viewer, under a label (its folder name unless given)."""

    directory: Path
    label: str


def sources_of(directories: Sequence[Path]) -> list[ViewSource]:
    """Labels for the folders: their names, made unique with a number where two share one."""
    sources: list[ViewSource] = []
    seen: dict[str, int] = {}
    for directory in directories:
        name = directory.resolve().name or str(directory)
        seen[name] = seen.get(name, 0) + 1
        sources.append(ViewSource(directory, name if seen[name] == 1 else f"{name} ({seen[name]})"))
    return sources


def _records_by_trace(
    directory: Path, traces: Sequence[LoadedTrace], tasks: Mapping[str, Task]
) -> dict[str, EpisodeRecord]:
    summary, _ = read_run_summary(directory)
    records = summary.episodes if summary is not None else records_from_traces(traces, tasks)
    return {r.trace: r for r in records if r.trace is not None}


def _image_uri(loaded: LoadedTrace, root: Path, entry: Mapping[str, Any]) -> str | None:
    """A data URI of an observation's image, from the files kept beside its trace or the run's."""
    sha = entry.get("sha256")
    media_type = entry.get("media_type")
    if not isinstance(sha, str) or not isinstance(media_type, str) or not media_type.startswith("image/"):
        return None
    if not sha.isalnum():  # a hash names a file in the folder, never a path
        return None
    for folder in (loaded.path.parent / FILES_DIR, root / FILES_DIR):
        path = folder / sha
        if path.is_file() and path.stat().st_size <= MAX_IMAGE_BYTES:
            return f"data:{media_type};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"
    return None


def _episode(
    source: ViewSource,
    index: int,
    loaded: LoadedTrace,
    record: EpisodeRecord | None,
    tasks: Mapping[str, Task],
    images: dict[str, str],
) -> dict[str, Any]:
    trace = loaded.trace
    header, end = trace.header, trace.end
    task = tasks.get(header.task_id)
    kinds = sorted({kind for step in trace.steps for kind in step.error_kinds})
    status = record.status if record is not None else (end.status if end is not None else "aborted")
    if status == "aborted":
        kinds.append("aborted")
    for step in trace.steps:
        for observation in step.observations:
            for entry in observation.get("files") or []:
                sha = entry.get("sha256") if isinstance(entry, Mapping) else None
                if isinstance(sha, str) and sha not in images:
                    uri = _image_uri(loaded, source.directory, entry)
                    if uri is not None:
                        images[sha] = uri
    category = (
        record.category if record is not None and record.category else (task.category if task else None)
    )
    episode = {
        "id": f"{index}",
        "source": source.label,
        "rel": loaded.rel,
        "trial": loaded.trial,
        "task_set": record.task_set if record is not None else loaded.task_set,
        "task_id": header.task_id,
        "category": category or "",
        "query": task.query if task is not None else None,
        "agent": header.agent,
        "status": status,
        "reward": end.reward if end is not None else (record.reward if record is not None else 0.0),
        "passed": record.success if record is not None else False,
        "error_kinds": kinds,
        "infra": any(k in INFRA_KINDS for k in kinds),
        "model_errors": any(k not in INFRA_KINDS for k in kinds),
        "error": record.error if record is not None else None,
        "usage": record.usage if record is not None else None,
        "header": header.model_dump(mode="json"),
        "steps": [step.model_dump(mode="json", exclude={"request"}) for step in trace.steps],
        "requests": full_requests(trace.steps),
        "end": end.model_dump(mode="json") if end is not None else None,
    }
    milestones = _milestones(trace, task)
    if milestones is not None:
        episode["milestones"] = milestones
    return episode


def _milestones(trace: Trace, task: Task | None) -> str | None:
    """The episode's milestones and minefields in a line, where its task has any."""
    if task is None or trace.end is None or is_teacher_forced(trace):
        return None
    try:
        found = trace_milestones(trace, task)
    except NotScored as exc:
        return f"not scored: {exc}"
    return found.text() if found is not None else None


def collect_view_data(
    directories: Sequence[Path], tasks: Mapping[str, Task], *, title: str | None = None
) -> dict[str, Any]:
    """The viewer's payload: every episode of the folders (traces, run.json's records, images)."""
    episodes: list[dict[str, Any]] = []
    images: dict[str, str] = {}
    problems: list[str] = []
    for source in sources_of(directories):
        # partial traces too: an aborted episode keeps the steps it took before its model failed
        loaded, found = load_traces(source.directory, partial=True)
        problems += [f"{source.label}: {p}" for p in found]
        records = _records_by_trace(source.directory, loaded, tasks)
        for item in loaded:
            record = records.get(item.rel)
            episodes.append(_episode(source, len(episodes), item, record, tasks, images))
        shown = {item.rel for item in loaded}
        for rel, record in records.items():
            if rel not in shown:
                problems.append(
                    f"{source.label}: {record.task_id} (trial {record.trial}): trace {rel} is missing"
                )
    labels = [s.label for s in sources_of(directories)]
    return {
        "title": title or "toolgym traces: " + ", ".join(labels),
        "sources": labels,
        "episodes": episodes,
        "images": images,
        "problems": problems,
    }


def payload_json(payload: Mapping[str, Any]) -> str:
    """JSON safe inside a <script> element: `<` escaped, so no text in it can close the element."""
    return json.dumps(payload, ensure_ascii=False, sort_keys=True).replace("<", "\\u003c")


def render_viewer(payload: Mapping[str, Any]) -> str:
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">'
        f"<title>{html.escape(str(payload['title']))}</title><style>{STYLE}</style></head>"
        '<body><header><h1 id="title"></h1><nav><a href="#/">Episodes</a></nav></header>'
        '<main id="app"></main>'
        f'<script type="application/json" id="payload">{payload_json(payload)}</script>'
        f"<script>{SCRIPT}</script></body></html>\n"
    )


def write_viewer(payload: Mapping[str, Any], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, render_viewer(payload))
    return path


LOGIN_PATH = "/login"
_COOKIE = "toolgym-viewer"


def viewer_app(
    directories: Sequence[Path],
    tasks: Mapping[str, Task],
    *,
    exposure: Exposure,
    title: str | None = None,
) -> Starlette:
    """The viewer as an app on the shared HTTP toolkit: one page at `/`, read again on every load
    (a reload shows a run that is still going). With credentials, a browser logs in once at
    `/login?token=...`, which sets an HttpOnly, same-site-only cookie holding an HMAC of the token
    under a secret of this app (`CookieLogins`), never the token; programs may send the bearer header."""
    credentials = exposure.credentials
    logins = CookieLogins(credentials) if credentials is not None else None

    def page(request: Request) -> Response:
        try:
            body = render_viewer(collect_view_data(directories, tasks, title=title))
        except Exception as exc:  # a folder that changed under us: say so, keep serving
            return PlainTextResponse(f"cannot read the traces: {type(exc).__name__}: {exc}", 500)
        return HTMLResponse(body, headers={"Cache-Control": "no-store"})

    def login(request: Request) -> Response:
        token = request.query_params.get("token", "").encode()
        if credentials is None or logins is None or credentials.client(token) is None:
            return PlainTextResponse("wrong or missing token", 401)
        response = RedirectResponse("/", 303)  # the token leaves the address bar
        response.set_cookie(_COOKIE, logins.cookie_for(token), httponly=True, samesite="strict")
        return response

    app = Starlette(routes=[Route("/", page), Route("/index.html", page), Route(LOGIN_PATH, login)])
    secure(app, exposure)
    if logins is not None:  # outermost: turns a login cookie into the bearer header
        app.add_middleware(BearerCookie, cookie=_COOKIE, logins=logins)
    return app


@contextmanager
def serve_viewer(
    directories: Sequence[Path],
    tasks: Mapping[str, Task],
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    title: str | None = None,
    credentials: Credentials | None = None,
) -> Iterator[str]:
    """Serves the viewer on host:port (0: an ephemeral port) in a thread; yields its URL. Beyond
    loopback it needs `credentials` (InsecureBindError otherwise)."""
    exposure = Exposure(host=host, credentials=credentials, public_paths=frozenset({LOGIN_PATH}))
    server = ServerThread(viewer_app(directories, tasks, exposure=exposure, title=title), host, port)
    server.what = "trace viewer"
    with server as url:
        yield f"{url}/"


STYLE = """
body{font-family:system-ui,sans-serif;margin:0;color:#222;background:#fafafa}
header{background:#283040;color:#fff;padding:.5em 1em;display:flex;gap:2em;align-items:baseline}
header h1{font-size:1.2em;margin:0}header a{color:#cde}
main{padding:1em}
table{border-collapse:collapse;font-size:.9em;background:#fff}
th,td{border:1px solid #ddd;padding:.25em .5em;text-align:left;vertical-align:top}
tr.row:hover{background:#eef3ff;cursor:pointer}
.filters{display:flex;flex-wrap:wrap;gap:1em;margin-bottom:1em;align-items:end}
.filters label{display:flex;flex-direction:column;font-size:.8em;color:#555}
.badge{display:inline-block;border-radius:3px;padding:0 .4em;margin-right:.3em;font-size:.85em}
.ok{background:#d8f0dc}.fail{background:#f7d9d9}.infra{background:#f9e3b5}.model{background:#f0d0f0}
.step{background:#fff;border:1px solid #ccc;border-radius:4px;margin:.7em 0;padding:.5em .8em}
.step.differs{border-color:#c44e52;box-shadow:0 0 0 2px #f3c2c3}
.step h3{margin:.1em 0 .4em;font-size:1em}
.part{margin:.4em 0}.part>b{display:block;font-size:.8em;color:#555}
pre{white-space:pre-wrap;word-break:break-word;background:#f4f4f4;padding:.4em;margin:.2em 0;max-height:30em;overflow:auto}
img.obs{max-width:100%;max-height:28em;border:1px solid #ccc;display:block;margin:.3em 0}
.columns{display:grid;grid-template-columns:1fr 1fr;gap:1em}
.meta{font-size:.9em;color:#444}.meta span{margin-right:1.2em}
.msg{border-left:3px solid #aab;padding-left:.5em;margin:.3em 0}
.missing{color:#a33;font-style:italic}
.msg.notification{border-left-color:#d08c2b;background:#fff7e8}
tr.agent-step{background:#f0f4fa}tr.event td:first-child,tr.agent-step td:first-child{white-space:nowrap}
"""

# The page's script: a hash router over three views (#/, #/episode/ID, #/compare/A/B). It builds
# every element with textContent, never innerHTML, so nothing from a trace is read as markup.
SCRIPT = r"""
"use strict";
const DATA = JSON.parse(document.getElementById("payload").textContent);
const EPISODES = DATA.episodes;
const BY_ID = new Map(EPISODES.map(e => [e.id, e]));
const app = document.getElementById("app");
document.getElementById("title").textContent = DATA.title;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    node.append(c instanceof Node ? c : String(c));
  }
  return node;
}
const show = (...nodes) => app.replaceChildren(...nodes.filter(n => n !== null && n !== undefined));
const pretty = v => (typeof v === "string" ? v : JSON.stringify(v, null, 2));
const pre = (v, cls) => el("pre", cls ? {class: cls} : {}, pretty(v));
const part = (label, ...body) => el("div", {class: "part"}, el("b", {}, label), ...body);
const num = v => (v === null || v === undefined ? "–" : Number(v).toFixed(v >= 100 ? 0 : 1));

function kindBadge(kind) {
  const infra = kind === "infra_error" || kind === "aborted";
  return el("span", {class: "badge " + (infra ? "infra" : "model"), title: infra ? "infrastructure error" : "model error"},
    (infra ? "infra: " : "model: ") + kind);
}
function passBadge(e) {
  return el("span", {class: "badge " + (e.passed ? "ok" : "fail")}, e.passed ? "passed" : "failed");
}

// ---- the episode list, with filters kept in the URL's query part of the hash ----
const FILTERS = ["task", "passed", "kind", "category", "source"];
function readFilters(query) {
  const params = new URLSearchParams(query || "");
  return Object.fromEntries(FILTERS.map(f => [f, params.get(f) || ""]));
}
function matches(e, f) {
  if (f.task && !(e.task_id + " " + e.task_set).toLowerCase().includes(f.task.toLowerCase())) return false;
  if (f.passed && String(e.passed) !== f.passed) return false;
  if (f.kind === "none" && e.error_kinds.length) return false;
  if (f.kind === "infra" && !e.infra) return false;
  if (f.kind === "model" && !e.model_errors) return false;
  if (f.kind && !["none", "infra", "model"].includes(f.kind) && !e.error_kinds.includes(f.kind)) return false;
  if (f.category && e.category !== f.category) return false;
  if (f.source && e.source !== f.source) return false;
  return true;
}
function select(name, value, options) {
  const s = el("select", {name: name, id: "filter-" + name});
  for (const [v, label] of options) {
    const o = el("option", {value: v}, label);
    if (v === value) o.selected = true;
    s.append(o);
  }
  return s;
}
function listView(query) {
  const f = readFilters(query);
  const uniq = key => [...new Set(EPISODES.map(e => e[key]).filter(Boolean))].sort();
  const kinds = [...new Set(EPISODES.flatMap(e => e.error_kinds))].sort();
  const controls = [
    el("label", {}, "task", el("input", {name: "task", id: "filter-task", value: f.task, placeholder: "id or set"})),
    el("label", {}, "passed", select("passed", f.passed, [["", "all"], ["true", "passed"], ["false", "failed"]])),
    el("label", {}, "error kind", select("kind", f.kind, [["", "all"], ["none", "no errors"], ["infra", "any infra error"],
      ["model", "any model error"], ...kinds.map(k => [k, k])])),
    el("label", {}, "category", select("category", f.category, [["", "all"], ...uniq("category").map(c => [c, c])])),
  ];
  if (DATA.sources.length > 1)
    controls.push(el("label", {}, "run", select("source", f.source, [["", "all"], ...DATA.sources.map(s => [s, s])])));
  const form = el("div", {class: "filters"}, ...controls);
  const apply = () => {
    const params = new URLSearchParams();
    for (const name of FILTERS) {
      const input = form.querySelector("[name=" + name + "]");
      if (input && input.value) params.set(name, input.value);
    }
    history.replaceState(null, "", "#/?" + params.toString());
    render();
  };
  form.addEventListener("change", apply);
  form.querySelector("#filter-task").addEventListener("keyup", e => { if (e.key === "Enter") apply(); });
  const shown = EPISODES.filter(e => matches(e, f));
  const head = ["", "run", "task set", "task", "trial", "category", "agent", "status", "reward", "steps", "errors"];
  const table = el("table", {id: "episodes"}, el("tr", {}, ...head.map(h => el("th", {}, h))));
  const picked = new Set();
  const compare = el("button", {id: "compare", disabled: "disabled", onclick: () => {
    const [a, b] = [...picked];
    location.hash = "#/compare/" + a + "/" + b;
  }}, "compare the two ticked");
  for (const e of shown) {
    const tick = el("input", {type: "checkbox", class: "pick", "data-id": e.id});
    tick.addEventListener("click", ev => {
      ev.stopPropagation();
      if (tick.checked) picked.add(e.id); else picked.delete(e.id);
      if (picked.size === 2) compare.removeAttribute("disabled"); else compare.setAttribute("disabled", "disabled");
    });
    const row = el("tr", {class: "row", "data-id": e.id, onclick: () => { location.hash = "#/episode/" + e.id; }},
      el("td", {}, tick), el("td", {class: "source"}, e.source), el("td", {}, e.task_set), el("td", {class: "task"}, e.task_id),
      el("td", {}, e.trial), el("td", {}, e.category), el("td", {}, e.agent),
      el("td", {}, passBadge(e), e.status), el("td", {}, num(e.reward)), el("td", {}, e.steps.length),
      el("td", {}, ...e.error_kinds.map(kindBadge)));
    table.append(row);
  }
  const problems = DATA.problems.length ? part("not shown", pre(DATA.problems.join("\n"))) : null;
  show(form, el("p", {id: "count"}, shown.length + " of " + EPISODES.length + " episodes "), compare,
    table, problems);
}

// ---- one episode ----
function messageView(m) {
  const body = [];
  if (m.content !== null && m.content !== undefined) body.push(pre(m.content));
  if (m.tool_calls) body.push(pre(m.tool_calls));
  const who = m.role + (m.tool_call_id ? " (" + m.tool_call_id + ")" : "");
  return el("div", {class: "msg"}, el("b", {}, who), ...body);
}
function requestView(e, i) {
  const full = e.requests[i];
  if (!full) return null;
  const previous = i > 0 && e.requests[i - 1] ? e.requests[i - 1].messages.length : 0;
  const added = full.messages.slice(previous);
  const box = el("details", {class: "request"},
    el("summary", {}, "request sent to the model: " + full.messages.length + " messages" +
      (full.tools ? ", " + full.tools.length + " tools" : "") + (previous ? " (" + added.length + " new)" : "")),
    part("parameters", pre(full.params)),
    part("messages", ...full.messages.map(messageView)));
  if (full.tools) box.append(part("tool schemas", pre(full.tools)));
  if (i === 0) box.open = true;
  return box;
}
function observationView(e, o) {
  const out = [];
  const files = o.files || [];
  for (const f of files) {
    const uri = DATA.images[f.sha256];
    if (uri) out.push(el("img", {class: "obs", src: uri, alt: f.name || f.sha256, title: f.name || f.sha256}));
    else out.push(el("div", {class: "missing"}, "file " + (f.name || f.sha256) + " (" + f.media_type + ") was not kept with the trace"));
  }
  if (!files.length || typeof o.content === "string") out.push(pre(o.text));
  const label = (o.tool ? o.tool + ": " : "") + o.type + (o.call_id ? " (" + o.call_id + ")" : "");
  const err = o.error ? el("div", {}, kindBadge(o.error.kind || "error"), o.error.message || pretty(o.error)) : null;
  return el("div", {class: o.type === "notification" ? "msg notification" : "msg"}, el("b", {}, label), err, ...out);
}

// ---- a world that moves: the events each step fired, and the episode's timeline ----
const eventCalls = ev => (ev.calls || []).map(c => c.tool + " " + JSON.stringify(c.arguments) +
  (c.ok ? "" : " (failed: " + (c.error || "error") + ")")).join("\n");
const notificationsOf = s => s.observations.filter(o => o.type === "notification");
function notifiedCell(s, ev) {
  if (!ev.notified) return el("td", {}, "no");
  const note = notificationsOf(s).find(o => o.content && o.content.event === ev.id);
  return el("td", {class: "notified"}, note ? note.text : "yes");
}
function eventRow(s, ev, withStep) {
  return el("tr", {class: "event", "data-event": ev.id}, el("td", {}, ev.time),
    withStep ? el("td", {}, s.index) : null, el("td", {}, "event " + ev.id),
    el("td", {}, pre(eventCalls(ev) || "no calls")), notifiedCell(s, ev));
}
function eventsView(s) {
  if (!s.events || !s.events.length) return null;
  return part("events fired", el("table", {class: "events"},
    el("tr", {}, ...["time", "event", "calls", "notified"].map(h => el("th", {}, h))),
    ...s.events.map(ev => eventRow(s, ev, false))));
}
function timelineView(e) {
  if (!e.steps.some(s => s.clock)) return null;
  const table = el("table", {id: "timeline"},
    el("tr", {}, ...["simulated time", "step", "what", "calls", "notified"].map(h => el("th", {}, h))));
  for (const s of e.steps) {
    for (const ev of s.events || []) table.append(eventRow(s, ev, true));
    const did = s.actions.map(a => a.type === "tool_call" ? a.name : a.type).join(", ") || "(no action parsed)";
    table.append(el("tr", {class: "agent-step", "data-step": s.index}, el("td", {}, s.clock || "–"),
      el("td", {}, s.index), el("td", {}, "the agent's step: " + did), el("td", {}), el("td", {})));
  }
  return part("timeline (simulated time: events, notifications and the agent's steps)", table);
}
function stepView(e, i, differs) {
  const s = e.steps[i];
  const latency = el("span", {class: "latency"}, "step " + num(s.latency_ms) + " ms");
  const model = s.model_latency_ms !== null && s.model_latency_ms !== undefined ?
    el("span", {class: "model-latency"}, "model " + num(s.model_latency_ms) + " ms") : null;
  const clock = s.clock ? el("span", {class: "clock"}, "clock " + s.clock) : null;
  const card = el("section", {class: "step" + (differs ? " differs" : ""), "data-step": s.index},
    el("h3", {}, "step " + s.index, " ", ...s.error_kinds.map(kindBadge)),
    el("div", {class: "meta"}, latency, model, clock),
    requestView(e, i),
    part("raw model output", s.raw === null ? el("i", {}, "(not kept: an object the trace cannot hold)") : pre(s.raw, "raw")),
    part("parsed actions", pre(s.actions, "actions")),
    part("observations", ...s.observations.map(o => observationView(e, o))));
  const events = eventsView(s);
  if (events) card.append(events);
  if (s.state_diff) card.append(part("state diff (" + (s.state_hash_before || "").slice(0, 12) + " → " +
    (s.state_hash_after || "").slice(0, 12) + ")", pre(s.state_diff, "diff")));
  if (s.faults && s.faults.length) card.append(part("injected faults", pre(s.faults)));
  if (s.tokens) card.append(part("tokens", pre({prompt: s.tokens.prompt_ids.length, completion: s.tokens.completion_ids.length})));
  return card;
}
function summaryView(e) {
  const h = e.header;
  const meta = el("div", {class: "meta"},
    el("span", {}, "run: " + e.source), el("span", {}, "agent: " + h.agent), el("span", {}, "protocol: " + h.protocol),
    el("span", {}, "seed: " + h.seed), el("span", {}, "clock: " + h.clock), h.golden ? el("span", {}, "golden") : null);
  const end = e.end;
  const outcome = el("div", {class: "meta outcome"}, passBadge(e), el("span", {}, "status: " + e.status),
    el("span", {class: "reward"}, "reward: " + num(e.reward)),
    end ? el("span", {}, "final answer: " + (end.final_answer === null ? "–" : end.final_answer)) : null,
    ...e.error_kinds.map(kindBadge));
  const more = [];
  if (e.query) more.push(part("task", pre(e.query)));
  more.push(part("tools offered", pre(h.tools.map(t => t.name + " " + t.version + " (" + t.backend + ")").join("\n"))));
  if (end && Object.keys(end.scores).length) more.push(part("scores", pre(end.scores)));
  if (e.milestones) more.push(part("milestones and minefields", pre(e.milestones)));
  const timeline = timelineView(e);
  if (timeline) more.push(timeline);
  if (e.error) more.push(part("why it stopped", pre(e.error)));
  if (e.usage) more.push(part("model usage", pre(e.usage)));
  return el("div", {class: "summary"}, el("h2", {}, e.task_id + " · trial " + e.trial), meta, outcome, ...more);
}
function episodeView(id) {
  const e = BY_ID.get(id);
  if (!e) { show(el("p", {}, "no episode " + id)); return; }
  const others = EPISODES.filter(o => o.task_id === e.task_id && o.id !== e.id);
  const links = others.length ? el("p", {class: "pairs"}, "compare with: ",
    ...others.map(o => el("a", {href: "#/compare/" + e.id + "/" + o.id, class: "pair"}, o.source + " / " + o.agent + " / trial " + o.trial + " ")))
    : null;
  show(summaryView(e), links, ...e.steps.map((_, i) => stepView(e, i, false)));
}

// ---- two episodes side by side, steps aligned by index ----
const sameStep = (a, b) => JSON.stringify([a.actions, a.observations.map(o => o.text), a.state_hash_after]) ===
  JSON.stringify([b.actions, b.observations.map(o => o.text), b.state_hash_after]);
function compareView(a, b) {
  const A = BY_ID.get(a), B = BY_ID.get(b);
  if (!A || !B) { show(el("p", {}, "no episode " + (A ? b : a))); return; }
  const n = Math.max(A.steps.length, B.steps.length);
  const differing = [];
  for (let i = 0; i < n; i++)
    if (!(A.steps[i] && B.steps[i] && sameStep(A.steps[i], B.steps[i]))) differing.push(i + 1);
  const note = el("p", {id: "diff-note"}, differing.length ? "steps that differ: " + differing.join(", ") :
    "every step is the same (actions, observations, state)");
  const column = e => el("div", {class: "column", "data-id": e.id}, summaryView(e),
    ...e.steps.map((_, i) => stepView(e, i, differing.includes(i + 1))));
  show(note, el("div", {class: "columns"}, column(A), column(B)));
}

function render() {
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, query] = hash.split("?");
  const parts = path.split("/").filter(Boolean);
  if (parts[0] === "episode" && parts[1]) episodeView(parts[1]);
  else if (parts[0] === "compare" && parts[2]) compareView(parts[1], parts[2]);
  else listView(query);
  window.scrollTo(0, 0);
}
window.addEventListener("hashchange", render);
render();
"""
