"""The page a person keeps open (`plugkit ui`): its routes on the runner's app. Only the route
table lives here; the page's code (runner/http/ui/) is imported on the first request to it, so
a runner nobody watches never pays for it.

Who reaches what: POST /login (the bearer token's holder, through the runner's guard like
/rpc) mints a one-time login link; /ui, /ui/... and /api/v1/... are checked by the page's own
guard (runner/http/ui/access.py: a cookie from that link, the page's own Origin only), never by
the token, and they only read."""

from aiohttp import web

from runner.rpc.context import Context

PAGE_PREFIXES = ("/ui/", "/api/v1/")


def is_page_path(path: str) -> bool:
    """The paths runner/http/guards.py leaves to the page's guard (after its Host check)."""
    return path == "/ui" or path.startswith(PAGE_PREFIXES)


def add_ui_routes(app: web.Application, ctx: Context) -> None:
    held: list = []

    def ui():
        if not held:
            from runner.http.ui.pages import Page

            held.append(Page(ctx))
        return held[0]

    async def mint(request: web.Request) -> web.StreamResponse:
        return await ui().mint(request)

    async def login(request: web.Request) -> web.StreamResponse:
        return await ui().login(request)

    async def page(request: web.Request) -> web.StreamResponse:
        return await ui().page(request)

    async def asset(request: web.Request) -> web.StreamResponse:
        return await ui().asset(request)

    async def api(request: web.Request) -> web.StreamResponse:
        return await ui().api(request)

    async def closing(app: web.Application) -> None:
        if held:
            await held[0].close()  # open event streams end, so the runner's stop does not wait on them

    app.router.add_post("/login", mint)
    app.router.add_get("/ui", page, allow_head=False)
    app.router.add_get("/ui/login", login, allow_head=False)
    app.router.add_get("/ui/assets/{name}", asset, allow_head=False)
    app.router.add_get("/api/v1/{name}", api, allow_head=False)
    app.on_shutdown.append(closing)
