"""Who may see the page: one-time login links, the cookie they become, and the checks every
page request passes. Each rule names the attack it stops.

- The login secret is single-use and expires (LINK_TTL_S): a link left in a terminal's
  scrollback or a shell history is worth nothing once used or old.
- The cookie is HttpOnly (no script reads it), SameSite=Strict (no other site's page or link
  sends it), Path=/ and named for the runner's port (cookies are not scoped by port); its
  value is random and held here only as a hash, and it expires (SESSION_TTL_S).
- An Origin other than the page's own, or a fetch another site started (Sec-Fetch-Site), is
  refused: the Host check before it (runner/http/guards.py) stops DNS rebinding.
- Framing, inline script and every other source are refused by the CSP on every answer.
"""

import hashlib
import secrets
import time
from typing import Callable, Optional

from aiohttp import web

from runner.http.replies import error
from runner.system import logs

log = logs.get("plugkit.ui")

LINK_TTL_S = 120.0
SESSION_TTL_S = 12 * 3600.0
MAX_PENDING = 16  # unused links kept; minting more drops the oldest
MAX_SESSIONS = 64

SECURITY_HEADERS = {
    "Content-Security-Policy": ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                                "img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "Cross-Origin-Resource-Policy": "same-origin",
}
SAME_SITE = frozenset({"same-origin", "none"})  # Sec-Fetch-Site values of the page's own requests
NO_SESSION = "no page session (or it expired): run `plugkit ui` for a login link"


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class Access:
    def __init__(self, port: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.cookie = f"plugkit_ui_{port}"
        self.clock = clock
        self.links: dict[str, float] = {}  # hash of a login secret -> when it expires
        self.sessions: dict[str, float] = {}  # hash of a cookie value -> when it expires

    def mint(self) -> str:
        """A new one-time login secret."""
        self._expire(self.links, MAX_PENDING)
        secret = secrets.token_urlsafe(32)
        self.links[_digest(secret)] = self.clock() + LINK_TTL_S
        return secret

    def redeem(self, secret: str) -> Optional[str]:
        """The login secret exchanged (once) for a new session's cookie value; None: unknown,
        used or expired."""
        expires = self.links.pop(_digest(secret), None) if secret else None
        if expires is None or expires <= self.clock():
            return None
        self._expire(self.sessions, MAX_SESSIONS)
        value = secrets.token_urlsafe(32)
        self.sessions[_digest(value)] = self.clock() + SESSION_TTL_S
        return value

    def signed_in(self, request: web.Request) -> bool:
        value = request.cookies.get(self.cookie, "")
        expires = self.sessions.get(_digest(value)) if value else None
        return expires is not None and expires > self.clock()

    def foreign(self, request: web.Request, navigation: bool = False) -> Optional[web.Response]:
        """The refusal of a request another site's page made, else None. `navigation`: a top-level
        GET navigation from another site is let through (the login link: `plugkit ui --open`
        hands the browser a local file that goes there, and a file is another site to it)."""
        origin = request.headers.get("Origin")
        if origin is not None and origin != f"http://{request.host}":
            return refuse(request, 403, "foreign_origin", "cross-origin requests are refused")
        site = request.headers.get("Sec-Fetch-Site")
        if site is not None and site not in SAME_SITE and not (navigation and cross_site_navigation(request)):
            return refuse(request, 403, "cross_site", "requests another site started are refused")
        return None

    def _expire(self, table: dict[str, float], cap: int) -> None:
        now = self.clock()
        for key, expires in list(table.items()):
            if expires <= now:
                del table[key]
        while len(table) >= cap:
            del table[next(iter(table))]  # oldest first: dicts keep insertion order


def cross_site_navigation(request: web.Request) -> bool:
    """A top-level page load another site (or a local file) started: no script of that site reads
    the answer, and a login secret only a token holder could mint is all it can carry."""
    h = request.headers
    return (request.method == "GET" and h.get("Sec-Fetch-Site") in ("cross-site", "same-site")
            and h.get("Sec-Fetch-Mode") == "navigate" and h.get("Sec-Fetch-Dest") == "document")


def guarded(response: web.StreamResponse) -> web.StreamResponse:
    response.headers.update(SECURITY_HEADERS)
    return response


def refuse(request: web.Request, status: int, reason: str, text: str) -> web.Response:
    log.warning("page_request_refused", status=status, reason=reason, path=request.path)
    return guarded(error(status, text))  # type: ignore[return-value]


def set_cookie(response: web.StreamResponse, name: str, value: str) -> None:
    response.set_cookie(name, value, max_age=int(SESSION_TTL_S), path="/", httponly=True, samesite="Strict")
