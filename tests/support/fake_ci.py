"""A fake GitHub and GitLab REST API on loopback, for `plugkit gate ci` tests: the response
shapes of their public docs (GitHub check runs with total_count and Link pagination, a job's
log; GitLab pipelines for a sha, a pipeline's jobs paged by X-Next-Page, a job's trace).
Runs an aiohttp server in a thread; the test sets what each endpoint says and reads the
requests it got (their Authorization / PRIVATE-TOKEN headers included)."""

import asyncio
import threading

from aiohttp import web

from tests.support.runner_home import free_port


class FakeCI:
    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.check_runs: list[dict] = []  # GitHub: the commit's check runs, in pages of PAGE
        self.pipelines: list[dict] = []  # GitLab: the sha's pipelines
        self.jobs: list[dict] = []  # GitLab: the pipeline's jobs, in pages of PAGE
        self.logs: dict[int, str] = {}  # job id -> its log
        self.refuse = 0  # answer this status (403) to everything while set
        self.flip_after = 0  # > 0: after this many check-run asks, every run completes green
        self.page = 2
        self.seen: list[tuple[str, dict]] = []
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        self._ready.wait(10)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_get("/repos/{owner}/{name}/commits/{sha}/check-runs", self._check_runs)
        app.router.add_get("/repos/{owner}/{name}/actions/jobs/{job}/logs", self._job_log)
        app.router.add_get("/projects/{project}/pipelines", self._pipelines)
        app.router.add_get("/projects/{project}/pipelines/{pid}/jobs", self._jobs)
        app.router.add_get("/projects/{project}/jobs/{job}/trace", self._job_log)
        self._runner = web.AppRunner(app)
        self._loop.run_until_complete(self._runner.setup())
        self._loop.run_until_complete(web.TCPSite(self._runner, "127.0.0.1", self.port).start())
        self._ready.set()
        self._loop.run_forever()

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def _note(self, request: web.Request) -> None:
        self.seen.append((request.path_qs, {k: v for k, v in request.headers.items()
                                            if k in ("Authorization", "PRIVATE-TOKEN")}))

    def _refused(self):
        return web.json_response({"message": "Resource not accessible by integration"}, status=self.refuse)

    async def _check_runs(self, request: web.Request) -> web.Response:
        self._note(request)
        if self.refuse:
            return self._refused()
        asks = sum(1 for path, _ in self.seen if "/check-runs" in path)
        if self.flip_after and asks > self.flip_after:
            for run in self.check_runs:
                run.update(status="completed", conclusion="success")
        page = int(request.query.get("page", "1"))
        chunk = self.check_runs[(page - 1) * self.page: page * self.page]
        headers = {}
        if page * self.page < len(self.check_runs):
            headers["Link"] = f'<{self.url}{request.path}?per_page=100&page={page + 1}>; rel="next"'
        return web.json_response({"total_count": len(self.check_runs), "check_runs": chunk}, headers=headers)

    async def _job_log(self, request: web.Request) -> web.Response:
        self._note(request)
        return web.Response(text=self.logs.get(int(request.match_info["job"]), ""))

    async def _pipelines(self, request: web.Request) -> web.Response:
        self._note(request)
        if self.refuse:
            return self._refused()
        return web.json_response(self.pipelines)

    async def _jobs(self, request: web.Request) -> web.Response:
        self._note(request)
        page = int(request.query.get("page", "1"))
        chunk = self.jobs[(page - 1) * self.page: page * self.page]
        more = page * self.page < len(self.jobs)
        return web.json_response(chunk, headers={"X-Next-Page": str(page + 1) if more else ""})
