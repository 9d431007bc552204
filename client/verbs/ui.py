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
browser as well. The page only shows: approvals and other choices stay on the command line."""


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

        if not webbrowser.open(link["url"]):
            print("no browser found here: open the link above in one")
    return 0
