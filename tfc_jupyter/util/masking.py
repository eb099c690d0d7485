"""What a ``--notify`` URL shows: safe to show or serve anywhere (the jobs API, ``jobs --json``,
plans, settings, logs), while the job's record keeps the URL as written, to send from.

Apprise's own privacy form of a URL masks its password and tokens; here its query string,
fragment and headers are left out and every path part apprise left as written is ``***`` (a
webhook's path may be its secret). Apprise is imported only when a URL is shown or checked.
Standard library and :mod:`tfc_jupyter.errors` only: every surface may import it.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from ..errors import SpecError

_INSTALL = "pip install 'tfc_jupyter[notify]' (apprise)"
MASK = "***"
"""What a hidden part of a URL is shown as (apprise shows a password as ``****``)."""


def _apprise() -> Any:
    try:
        import apprise
    except ImportError:
        raise SpecError("--notify needs apprise, which is not installed", _INSTALL) from None
    return apprise


class _Quiet(logging.Filter):
    """Drops what apprise logs from this thread while it reads a URL to check or show it: its
    debug lines name the URL as written (a process whose logging shows them shows no
    password, token or path secret)."""

    def __init__(self) -> None:
        super().__init__()
        self.thread = threading.get_ident()

    def filter(self, record: logging.LogRecord) -> bool:
        return record.thread != self.thread

    def __enter__(self) -> _Quiet:
        logging.getLogger("apprise").addFilter(self)
        return self

    def __exit__(self, *exc: object) -> None:
        logging.getLogger("apprise").removeFilter(self)


def _plugin(url: str) -> Any:
    """Apprise's plugin for ``url``, None when apprise knows no such URL; read quietly."""
    apprise = _apprise()
    with _Quiet():
        return apprise.Apprise.instantiate(url)


def shown(url: str) -> str:
    """``url`` safe to show or serve anywhere (the jobs API, ``jobs --json``, plans, logs).

    Apprise's own privacy form of it (its password and tokens masked), with no query string
    or fragment (``?token=``, ``+Header=`` ...), and each part of its path that apprise left
    as written as ``***``: a webhook's path may be its secret. A URL apprise does not know
    keeps its scheme and host name, nothing more."""
    try:
        plugin = _plugin(url)
        private = str(plugin.url(privacy=True)) if plugin is not None else None
    except Exception:
        private = None
    if private is None:
        return _shown_unknown(url)
    scheme, _, rest = re.split(r"[?#]", private, maxsplit=1)[0].partition("://")
    where, _, path = rest.partition("/")
    parts = [p if _masked_by_apprise(p, url) else MASK for p in path.split("/") if p]
    return f"{scheme}://{where}" + "".join(f"/{p}" for p in parts)


_HOST = re.compile(
    r"(?:localhost|[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?"
)
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,31}")


def _masked_by_apprise(part: str, url: str) -> bool:
    """A path part of apprise's privacy form that apprise masked (``T...A``, ``****``)."""
    return ("..." in part or "****" in part) and part not in url


def _shown_unknown(url: str) -> str:
    """A URL apprise does not know: its scheme and a host name (``***`` for a host that is
    no name, such as a token), nothing after them."""
    scheme, sep, rest = url.partition("://")
    if not sep or not _SCHEME.fullmatch(scheme):
        return "..."
    host = re.split(r"[/?#]", rest, maxsplit=1)[0].rpartition("@")[2]
    return f"{scheme}://{host if _HOST.fullmatch(host) or not host else MASK}/..."


def shown_all(urls: Iterable[object]) -> list[str]:
    """Each of ``urls`` as :func:`shown` shows it: a spec's, an option's or a setting's
    ``notify`` on its way out (the record keeps the URLs as written: they are sent from it)."""
    return [shown(str(u)) for u in urls]


def unmasked(urls: Sequence[str], known: Sequence[str]) -> tuple[str, ...]:
    """``urls`` with each that is the shown form of one of ``known`` (in order, each used
    once) put back as written: a form that showed a cell's ``--notify`` masked sends it back
    masked, and the job is told where the cell says."""
    left = list(known)
    out = []
    for url in urls:
        match = next((k for k in left if k != url and shown(k) == url), None)
        if match is not None:
            left.remove(match)
        out.append(match or url)
    return tuple(out)


def masked(text: str, urls: Sequence[str]) -> str:
    """``text`` (what apprise said) with each URL as :func:`shown` shows it, and every part of
    a URL that form hides (a password, a token in its path or query) as ``***``."""
    return _hide(text, _hidden(urls))


def _hidden(urls: Sequence[str]) -> list[tuple[str, str]]:
    """``(written, shown)`` pairs that :func:`masked` replaces, longest URL first."""
    pairs = []
    for url in sorted(urls, key=len, reverse=True):
        visible = shown(url)
        pairs.append((url, visible))
        for part in re.split(r"[/:@?&=#]+", url):
            if len(part) >= 4 and part not in visible:
                pairs.append((part, MASK))
    return pairs


def _hide(text: str, pairs: Sequence[tuple[str, str]]) -> str:
    for written, visible in pairs:
        text = text.replace(written, visible)
    return text


class _Hiding(logging.Filter):
    """Masks the URLs being sent to in what apprise (and urllib3 under it) logs: a process
    whose logging shows their debug lines shows no password, token or path secret."""

    LOGGERS = ("apprise", "urllib3.connectionpool")

    def __init__(self, urls: Sequence[str]) -> None:
        super().__init__()
        self.pairs = _hidden(urls)

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            text = record.getMessage()
        except Exception:  # a record that cannot be formatted: logging says so itself
            return True
        hidden = _hide(text, self.pairs)
        if hidden != text:
            record.msg, record.args = hidden, ()
        return True

    def __enter__(self) -> _Hiding:
        for name in self.LOGGERS:
            logging.getLogger(name).addFilter(self)
        return self

    def __exit__(self, *exc: object) -> None:
        for name in self.LOGGERS:
            logging.getLogger(name).removeFilter(self)


def check(urls: Sequence[str]) -> tuple[str, ...]:
    """The URLs, each one apprise can send to; a blank one is dropped.

    Raises:
        SpecError: a URL apprise does not know, or one masked as :func:`shown` shows it,
            named (masked) with the fix.
    """
    urls = tuple(u.strip() for u in urls if u and u.strip())
    if not urls:
        return ()
    _apprise()
    for url in urls:
        if MASK in url:  # copied from a plan or the jobs list: it would go somewhere else
            raise SpecError(
                f"--notify {shown(url)!r} is masked, as plans and the jobs list show it",
                "write the URL itself (with its password or token), or leave it out",
                field="notify",
            )
        if _plugin(url) is None:
            raise SpecError(
                f"--notify {shown(url)!r} is not a URL apprise can send to",
                "write it like json://host/path (a webhook), mailto://user:password@host or "
                "slack://TokenA/TokenB/TokenC: see https://github.com/caronc/apprise/wiki",
                field="notify",
            )
    return urls
