"""CI check: every handler of the jobs API requires Jupyter's authentication and XSRF checks.

Fails (exit 1) when a handler class of ``tfc_jupyter.server`` (routed or not) has an HTTP method
that is not wrapped by ``tornado.web.authenticated``, or is not a jupyter_server ``APIHandler``
(which checks XSRF on cookie-authenticated requests). Run by ``scripts/test.sh``.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
from collections.abc import Callable, Iterable
from typing import Any

from jupyter_server.base.handlers import APIHandler
from tornado import web

HTTP_METHODS = ("get", "head", "post", "delete", "patch", "put", "options")
_AUTHENTICATED = web.authenticated(lambda self: None).__code__
_FRAMEWORK = ("tornado.", "jupyter_server.")


def is_authenticated(func: Callable[..., Any]) -> bool:
    """True when ``func`` or a function it wraps is tornado's ``authenticated`` wrapper."""
    seen: Any = func
    while seen is not None:
        if getattr(seen, "__code__", None) is _AUTHENTICATED:
            return True
        seen = getattr(seen, "__wrapped__", None)
    return False


def problems(routes: Iterable[tuple[str, type[web.RequestHandler]]]) -> list[str]:
    """What is wrong with each ``(pattern, handler class)``; empty when all is well."""
    found = []
    for pattern, cls in routes:
        if not issubclass(cls, APIHandler):
            found.append(f"{cls.__name__} ({pattern}) is not a jupyter_server APIHandler")
        for name in HTTP_METHODS:
            func = getattr(cls, name, None)
            owner = next((k for k in cls.__mro__ if name in vars(k)), None)
            if func is None or owner is None or owner.__module__.startswith(_FRAMEWORK):
                continue  # the framework's own default (tornado's answers 405)
            if not is_authenticated(func):
                found.append(f"{cls.__name__}.{name} ({pattern}) is not @tornado.web.authenticated")
    return found


def all_handlers() -> list[tuple[str, type[web.RequestHandler]]]:
    """The routed handlers, and any other handler class defined in tfc_jupyter.server."""
    import tfc_jupyter.server
    from tfc_jupyter.server.handlers import ROUTES

    routes: list[tuple[str, type[web.RequestHandler]]] = list(ROUTES)
    routed = {cls for _, cls in routes}
    for info in pkgutil.iter_modules(tfc_jupyter.server.__path__, "tfc_jupyter.server."):
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if (
                issubclass(cls, web.RequestHandler)
                and cls.__module__ == module.__name__
                and cls not in routed
            ):
                routes.append(("(not routed)", cls))
    return routes


def main() -> int:
    """Print the verdict; 1 when a handler lacks authentication."""
    routes = all_handlers()
    found = problems(routes)
    for line in found:
        print(f"check_auth: {line}")
    if found:
        return 1
    print(f"check_auth: {len(routes)} handler classes, every HTTP method authenticated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
