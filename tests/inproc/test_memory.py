"""memory.* through the real app: params validation, error codes, the bounded index."""

import pytest

from plugkit import errors
from tests.support.inproc import RpcError, call

WHY = "\nWhy: the suite must stay fast.\nHow to apply: mark slow tests e2e."


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    (root / ".plugkit").mkdir(parents=True)
    (root / "app.py").write_text("def main():\n    pass\n")
    return root


async def test_memory_round_trip_over_rpc(make_client, ws, tmp_path):
    client = await make_client()
    at = {"session_id": "s1", "cwd": str(ws)}
    added = await call(client, "memory.add", **at, type="project", name="Fast tests",
                       description="keep the suite under 20 s", text="Entry point is app.py." + WHY)
    assert added["file"] == str(ws / ".plugkit" / "memory" / "fast-tests.md")
    assert added["body"].startswith("Entry point") and added["stale"] == []
    await call(client, "memory.add", **at, type="user", name="Terse", text="Prefers short answers.")

    listed = await call(client, "memory.list", **at)
    assert {(m["name"], m["scope"]) for m in listed["memories"]} == {("Terse", "user"), ("Fast tests", "project")}
    assert (tmp_path / "memory" / "terse.md").exists()  # user-wide: in the runner's home

    shown = await call(client, "memory.show", **at, name="fast tests")
    assert shown["description"] == "keep the suite under 20 s" and "How to apply" in shown["body"]
    found = await call(client, "memory.search", **at, text="suite fast", limit=5)
    assert found["memories"][0]["name"] == "Fast tests" and found["memories"][0]["score"] > 0

    (ws / "app.py").unlink()
    shown = await call(client, "memory.show", **at, name="Fast tests")
    assert shown["stale"] == ["missing app.py"]

    assert (await call(client, "memory.forget", **at, name="Fast tests"))["name"] == "Fast tests"
    with pytest.raises(RpcError) as info:
        await call(client, "memory.show", **at, name="Fast tests")
    assert info.value.code == errors.NOT_FOUND


async def test_memory_rules_map_to_error_codes(make_client, ws):
    client = await make_client()
    at = {"session_id": "s1", "cwd": str(ws)}
    cases = [
        ({"type": "feedback", "name": "x", "text": "Do it."}, errors.INVALID_PARAMS, "reasons"),
        ({"type": "reference", "name": "x", "text": "src/app.py"}, errors.INVALID_PARAMS, "derived"),
        ({"type": "reference", "name": "x", "text": "89ae02a"}, errors.INVALID_PARAMS, "derived"),
        ({"type": "reference", "name": "x", "text": "t t", "description": "d" * 90}, errors.INVALID_PARAMS,
         "description"),
    ]
    for params, code, rule in cases:
        with pytest.raises(RpcError) as info:
            await call(client, "memory.add", **at, **params)
        assert (info.value.code, info.value.data["rule"]) == (code, rule)
    await call(client, "memory.add", **at, type="reference", name="wiki", text="Docs are on the wiki.")
    with pytest.raises(RpcError) as info:
        await call(client, "memory.add", **at, type="reference", name="Wiki", text="Other text here.")
    assert info.value.code == errors.CONFLICT and "--replace" in info.value.data["next"]
    for bad in ({"type": "opinion", "name": "x", "text": "t"}, {"type": "reference", "name": "x", "text": "t",
                                                                "extra": 1}):
        with pytest.raises(RpcError) as info:
            await call(client, "memory.add", **at, **bad)
        assert info.value.code == errors.INVALID_PARAMS
    with pytest.raises(RpcError) as info:
        await call(client, "memory.list", session_id="s", cwd=str(ws / "nope"))
    assert info.value.code == errors.INVALID_PARAMS and "nope" not in info.value.args[0]


async def test_memory_index_is_bounded_for_session_start(make_client, ws):
    client = await make_client()
    at = {"session_id": "s1", "cwd": str(ws)}
    assert await call(client, "memory.index", **at) == {"text": "", "shown": 0, "total": 0}
    for i in range(50):
        await call(client, "memory.add", **at, type="reference", name=f"reference number {i}",
                   description="w" * 79, text=f"See app.py section {i} for the details.")
    await call(client, "memory.add", **at, type="reference", name="old module", text="It moved to lib/gone.py.")
    index = await call(client, "memory.index", **at)
    lines = index["text"].splitlines()
    assert len(lines) <= 40 and len(index["text"].encode()) <= 4096
    assert index["total"] == 51 and index["shown"] == len(lines) - 2
    assert lines[1].startswith("- [reference] old module") and "[STALE: missing lib/gone.py]" in lines[1]
    assert lines[-1] == f"- ... {51 - index['shown']} more: `plugkit memory list`"
    small = await call(client, "memory.index", **at, max_lines=5, max_bytes=1024)
    assert len(small["text"].splitlines()) <= 5 and len(small["text"].encode()) <= 1024
