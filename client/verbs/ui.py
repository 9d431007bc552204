"""`plugkit ui [--open] [--json]`: a one-time login link to the runner's page (starting the
runner if none runs). The link is minted by the runner for the holder of its token (POST
/login), works once and expires; the browser that opens it gets the page's cookie."""

from client.args import FLAG, Help, parse
from plugkit import codec
from client.wire.rpc import ClientError, RunnerUnavailable
from client.wire.session import connect

USAGE = """usage: plugkit ui [--open] [--json]

Prints a one-time link to the runner's page: running and recent tasks, sessions, each
workspace's phase and gate conditions, and the board of `plugkit work` runs, live. The link
works once and expires in two minutes; run this again for a new one. --open opens it in your
browser as well, through a file only you can read (a browser's command line is visible to every
local user). The page only shows: approvals and other choices stay on the command line."""


def main(argv: list[str]) -> int:
    try:
        opts, _ = parse(argv, {"--open": FLAG, "--json": FLAG}, usage=USAGE)
    except Help:
        print(USAGE)
        return 0
    client = connect()
    assert client is not None  # connect(start=True) starts one or raises
    try:
        headers = f"Authorization: Bearer {client.token}\r\nContent-Type: application/json\r\n"
        try:
            status, payload = client.conn.request("POST", "/login", b"{}", headers, timeout=10)
        except (OSError, ValueError) as exc:
            raise RunnerUnavailable(f"lost the runner ({exc.__class__.__name__}); check `plugkit runner status`") from None
    finally:
        client.close()
    if status == 404:
        raise ClientError("this runner predates the page; run `plugkit runner restart`")
    if status != 200:
        raise ClientError(f"the runner refused a login link (HTTP {status}); try `plugkit runner restart`")
    link = codec.loads(payload)
    if opts.get("json"):
        print(codec.dumps(link))
    else:
        print(link["url"])
        print(f"(works once, within {int(link['expires_in_s'])} s)")
    if opts.get("open"):
        import webbrowser

        if not webbrowser.open(_handoff(link["url"], link["expires_in_s"])):
            print("no browser found here: open the link above in one")
    return 0


def _handoff(url: str, ttl_s: float) -> str:
    """A file only we can read (0600, in a 0700 dir of the runner's home) that sends the browser
    on to `url`, named to the browser instead of the link: a command line is readable by every
    local user (/proc/PID/cmdline), and one watching for the browser's start would redeem the
    one-time link first. Files of earlier links, expired, go."""
    import html
    import os
    import secrets
    import time

    from plugkit import paths

    folder = os.path.join(paths.home(), "ui-links")
    os.makedirs(folder, mode=0o700, exist_ok=True)
    os.chmod(folder, 0o700)
    for name in os.listdir(folder):
        old = os.path.join(folder, name)
        try:
            if os.lstat(old).st_mtime < time.time() - ttl_s:
                os.unlink(old)
        except OSError:
            pass
    path = os.path.join(folder, f"login-{secrets.token_hex(8)}.html")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write('<!doctype html><meta charset="utf-8"><meta name="referrer" content="no-referrer">'
                 f'<meta http-equiv="refresh" content="0;url={html.escape(url)}"><title>plugkit</title>'
                 f'<a href="{html.escape(url)}">the page</a>\n')
    return "file://" + path
