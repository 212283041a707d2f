"""How ``blackbox view`` shows a media part: a thumbnail when the cassette holds the image's bytes,
else a badge with what the cassette knows (kind, media type, size, digest, URL or file id).

The page's Content-Security-Policy allows images from ``data:`` URIs only, and only raster image
types with clean base64 become one. See docs/view.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final

__all__ = ["render_media"]

#: Media types shown as a thumbnail (no SVG: an image that is a document of its own).
_THUMBNAIL_TYPES: Final = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_BASE64: Final = re.compile(r"[A-Za-z0-9+/]*={0,2}")


def render_media(part: dict[str, Any], text: Callable[[Any], str]) -> str:
    """One media part as HTML; ``text`` escapes (and masks) every value taken from the cassette."""
    kind = part.get("kind", "media")
    facts = [str(kind)]
    if isinstance(part.get("title"), str):
        facts.append(f"“{part['title']}”")
    for key in ("mediaType", "name", "detail"):
        if isinstance(part.get(key), str):
            facts.append(part[key])
    if isinstance(part.get("byteLength"), int):
        facts.append(f"{part['byteLength']:,} bytes")
    if isinstance(part.get("sha256"), str):
        facts.append(f"sha256 {part['sha256'][:12]}…")
    for key, label in (("url", "url"), ("fileId", "file")):
        if isinstance(part.get(key), str):
            facts.append(f"{label} {part[key]}")
    if isinstance(part.get("text"), str):
        facts.append(f"{len(part['text']):,} characters of text")
    badge = f'<span class="badge">{text(" · ".join(facts))}</span>'
    thumbnail = _thumbnail(part)
    image = f'<img alt="{text(kind)}" src="{thumbnail}">' if thumbnail else ""
    return f'<div class="media">{image}{badge}</div>'


def _thumbnail(part: dict[str, Any]) -> str | None:
    """The ``data:`` URI of an inline raster image (a cassette holds standard base64, as browsers read it)."""
    media_type, data = part.get("mediaType"), part.get("data")
    if media_type not in _THUMBNAIL_TYPES or not isinstance(data, str) or not _BASE64.fullmatch(data):
        return None
    return f"data:{media_type};base64,{data}"
