"""The math renderer an explorer page carries inline: KaTeX's script, its style sheet and its
fonts, read from a KaTeX distribution on this machine at build time, so that the page renders
formulas with no network.

The default is Debian's ``libjs-katex`` (``apt-get install libjs-katex``, which brings
``fonts-katex``): ``katex.min.js`` and ``katex.min.css`` in ``/usr/share/javascript/katex``,
its fonts in ``fonts/`` there. Any folder laid out as KaTeX's release (``katex.min.js``,
``katex.min.css``, ``fonts/*.woff2``) will do. Each ``@font-face`` keeps its WOFF2 source only,
as a ``data:`` URL (every browser that runs KaTeX reads WOFF2). Without the folder the page is
still built: it shows formulas as TeX source and says why (:func:`load_katex` gives the reason).
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from pathlib import Path

DEBIAN_KATEX = "/usr/share/javascript/katex"
"""Where Debian's libjs-katex puts KaTeX (the default of ``explore.katex``)."""

_VERSION = re.compile(r'version:"(\d+\.\d+\.\d+[^"]*)"')
_FONT_SOURCE = re.compile(r"src:(url\([^;}]*)")
_WOFF2 = re.compile(r"url\(['\"]?fonts/([A-Za-z0-9_-]+\.woff2)['\"]?\)")


@dataclass(frozen=True)
class Katex:
    """KaTeX ready to inline: its script, its style sheet with the fonts inside, its version
    and the folder it came from."""

    version: str
    script: str
    style: str
    source: str
    fonts: int


@dataclass(frozen=True)
class NoRenderer:
    """Why no renderer could be inlined (shown on the page)."""

    reason: str


def load_katex(directory: str | Path = DEBIAN_KATEX) -> Katex | NoRenderer:
    """KaTeX from ``directory``, or why it is not there."""
    folder = Path(directory)
    script_path, style_path = folder / "katex.min.js", folder / "katex.min.css"
    missing = [path.name for path in (script_path, style_path) if not path.is_file()]
    if missing:
        return NoRenderer(
            f"no {' or '.join(missing)} in {folder} (Debian: apt-get install libjs-katex; or "
            "set explore.katex to a KaTeX release folder)"
        )
    script = script_path.read_text(encoding="utf-8")
    found = _VERSION.search(script)
    if found is None:
        return NoRenderer(f"{script_path} does not look like KaTeX (no version string)")
    style, fonts = _inline_fonts(style_path.read_text(encoding="utf-8"), folder / "fonts")
    return Katex(found.group(1), script, style, str(folder), fonts)


def katex_version(directory: str | Path = DEBIAN_KATEX) -> str:
    """What the page will carry, in words (a rule's param, so that installing or updating
    KaTeX rebuilds the pages): ``KaTeX 0.16.4 (/usr/share/javascript/katex)``, or ``none``."""
    script = Path(directory) / "katex.min.js"
    if not (script.is_file() and (Path(directory) / "katex.min.css").is_file()):
        return "none"
    found = _VERSION.search(script.read_text(encoding="utf-8"))
    return f"KaTeX {found.group(1)} ({directory})" if found else "none"


def _inline_fonts(style: str, fonts: Path) -> tuple[str, int]:
    """The style sheet with each ``@font-face`` source list replaced by its WOFF2 file as a
    ``data:`` URL (the list dropped where that file is missing: the browser's fonts stand in),
    and how many fonts were inlined."""
    inlined = 0

    def source(match: re.Match[str]) -> str:
        nonlocal inlined
        woff2 = _WOFF2.search(match.group(1))
        path = fonts / woff2.group(1) if woff2 else None
        if path is None or not path.is_file():
            return "src:local('none')"
        inlined += 1
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        return f"src:url(data:font/woff2;base64,{data}) format('woff2')"

    return _FONT_SOURCE.sub(source, style), inlined
