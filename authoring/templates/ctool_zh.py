"""Templates of the ctool_zh apps (express_zh, messaging_zh, ...): the ctool templates phrased in
Chinese (`ctool.py` writes each template once, with its English and Chinese phrasings)."""

from __future__ import annotations

from toolgym.authoring.templates.ctool import templates

TEMPLATES = templates("zh")
