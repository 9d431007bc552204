"""CI as GitHub and GitLab report it for one commit, asked over their REST APIs by the runner
with a token the runner holds (never one from the agent's call).

GitHub: the commit's check runs (`GET /repos/{repo}/commits/{sha}/check-runs`, every page by
its Link header); a re-run adds a check run of the same name, so the newest of each name
counts. GitLab: the newest pipeline for the sha (`GET /projects/{id}/pipelines?sha=`), and for
a failed one its jobs (every page by X-Next-Page). A red answer names the failing job and
the tail of its log. A token the provider refuses (401/403) is an error naming the scope the
token lacks, never green.
"""

import re
from dataclasses import dataclass
from typing import Any, Optional
from urllib.parse import quote

import aiohttp

LOG_TAIL = 2048  # bytes of the failing job's log handed to the agent
MAX_PAGES = 20
TIMEOUT_S = 30.0
GITHUB_OK = frozenset({"success", "neutral", "skipped"})
# GitLab's own pipeline words (not plugkit's task states): a pipeline still on its way.
GITLAB_PENDING = frozenset("created waiting_for_resource preparing pending running scheduled".split())


@dataclass(frozen=True)
class Verdict:
    state: str  # green | red | pending | error
    note: str
    log: str = ""  # red: the tail of the failing job's log


class ApiError(Exception):
    pass


@dataclass(frozen=True)
class Provider:
    name: str
    api: str  # the public API's URL (ci_api_url overrides it)
    token_var: str  # the runner's environment variable holding the token
    scope: str  # what the token needs, said when the provider refuses it


PROVIDERS = {p.name: p for p in (
    Provider("github", "https://api.github.com", "GITHUB_TOKEN", "read access to checks and actions "
             "(a fine-grained token's 'Checks: read' and 'Actions: read', or a classic token's repo scope)"),
    Provider("gitlab", "https://gitlab.com/api/v4", "GITLAB_TOKEN", "the read_api scope"),
)}


def repo_of(remote_url: str) -> Optional[str]:
    """owner/name (GitLab: group/.../name) from an origin URL in any of git's spellings."""
    m = re.match(r"^(?:[a-z+]+://(?:[^@/]+@)?[^/]+/|[^@/:]+@[^:]+:)(.+?)(?:\.git)?/?$", remote_url.strip())
    return m.group(1) if m else None


async def _get(http: aiohttp.ClientSession, url: str, provider: Provider, text: bool = False) -> tuple[Any, Any]:
    async with http.get(url) as answer:
        if answer.status in (401, 403):
            raise ApiError(f"{provider.name} refused the token ({answer.status}): it needs {provider.scope}")
        if answer.status == 404:
            raise ApiError(f"{provider.name} has no {url.split('?')[0]} (the repository name, or a token "
                           "that cannot see it)")
        if answer.status >= 400:
            raise ApiError(f"{provider.name} answered {answer.status} for {url.split('?')[0]}")
        body = await answer.text() if text else await answer.json(content_type=None)
        return body, answer


def _headers(provider: Provider, token: str) -> dict[str, str]:
    if provider.name == "github":
        return {"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28"}
    return {"PRIVATE-TOKEN": token}


async def _github(http: aiohttp.ClientSession, p: Provider, api: str, repo: str, sha: str) -> Verdict:
    url: Optional[str] = f"{api}/repos/{repo}/commits/{sha}/check-runs?per_page=100"
    runs: list[dict] = []
    for _ in range(MAX_PAGES):
        if url is None:
            break
        body, answer = await _get(http, url, p)
        runs += body.get("check_runs") or []
        url = answer.links.get("next", {}).get("url")
        url = str(url) if url else None
    newest: dict[str, dict] = {}
    for run in runs:  # a re-run is a new check run of the same name: the newest one counts
        name = run.get("name") or str(run.get("id"))
        if name not in newest or (run.get("id") or 0) > (newest[name].get("id") or 0):
            newest[name] = run
    if not newest:
        return Verdict("pending", f"no check run on {sha[:12]} yet")
    waiting = sorted(n for n, r in newest.items() if r.get("status") != "completed")
    failed = sorted(n for n, r in newest.items() if r.get("status") == "completed" and r.get("conclusion") not in GITHUB_OK)
    if failed:
        run = newest[failed[0]]
        log = ""
        try:
            log, _ = await _get(http, f"{api}/repos/{repo}/actions/jobs/{run.get('id')}/logs", p, text=True)
        except (ApiError, aiohttp.ClientError):
            log = (run.get("output") or {}).get("summary") or ""
        return Verdict("red", f"check {failed[0]!r} {run.get('conclusion')}"
                       + (f" ({len(failed) - 1} more failed)" if len(failed) > 1 else ""), log[-LOG_TAIL:])
    if waiting:
        return Verdict("pending", f"{len(waiting)} check run(s) not finished: {', '.join(waiting[:3])}")
    return Verdict("green", f"{len(newest)} check run(s) passed")


async def _gitlab(http: aiohttp.ClientSession, p: Provider, api: str, repo: str, sha: str) -> Verdict:
    project = f"{api}/projects/{quote(repo, safe='')}"
    pipelines, _ = await _get(http, f"{project}/pipelines?sha={sha}&order_by=id&sort=desc&per_page=20", p)
    if not pipelines:
        return Verdict("pending", f"no pipeline on {sha[:12]} yet")
    newest = max(pipelines, key=lambda x: x.get("id") or 0)  # a re-run pipeline supersedes the old one
    status = newest.get("status")
    if status == "success":
        return Verdict("green", f"pipeline {newest.get('id')} passed")
    if status in GITLAB_PENDING:
        return Verdict("pending", f"pipeline {newest.get('id')} is {status}")
    jobs: list[dict] = []
    page: Optional[str] = "1"
    for _ in range(MAX_PAGES):
        if not page:
            break
        body, answer = await _get(http, f"{project}/pipelines/{newest.get('id')}/jobs?per_page=100&page={page}", p)
        jobs += body or []
        page = answer.headers.get("X-Next-Page") or None
    failed = [j for j in jobs if j.get("status") == "failed" and not j.get("allow_failure")]
    if not failed:
        return Verdict("red", f"pipeline {newest.get('id')} is {status}")
    job = failed[0]
    try:
        log, _ = await _get(http, f"{project}/jobs/{job.get('id')}/trace", p, text=True)
    except (ApiError, aiohttp.ClientError):
        log = ""
    return Verdict("red", f"job {job.get('name')!r} failed in pipeline {newest.get('id')}"
                   + (f" ({len(failed) - 1} more failed)" if len(failed) > 1 else ""), log[-LOG_TAIL:])


ASK = {"github": _github, "gitlab": _gitlab}


async def ask(name: str, api: Optional[str], repo: str, sha: str, token: str) -> Verdict:
    p = PROVIDERS[name]
    try:
        async with aiohttp.ClientSession(headers=_headers(p, token),
                                         timeout=aiohttp.ClientTimeout(total=TIMEOUT_S)) as http:
            return await ASK[name](http, p, (api or p.api).rstrip("/"), repo, sha)
    except ApiError as exc:
        return Verdict("error", str(exc))
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        return Verdict("error", f"{p.name} could not be asked ({exc.__class__.__name__}: {str(exc)[:160]})")
