"""The log redaction processor drops token-like keys and registered secrets anywhere in values."""

from runner.system import logs


def test_redacts_registered_secret_and_token_keys():
    logs.add_secret("s3cr3t-token-value")
    event = {"event": "x", "token": "anything", "Authorization": "Bearer s3cr3t-token-value",
             "detail": "header was Bearer s3cr3t-token-value", "nested": {"list": ["s3cr3t-token-value"]}}
    out = logs.redact(None, "info", event)
    flat = repr(out)
    assert "s3cr3t-token-value" not in flat and "anything" not in flat
    assert out["token"] == logs.REDACTED and out["Authorization"] == logs.REDACTED
    assert out["detail"] == f"header was Bearer {logs.REDACTED}"
    assert out["event"] == "x"


def test_the_log_rotates_at_its_size_and_keeps_its_backups(tmp_path):
    import logging

    log_file = tmp_path / "runner.log"
    logs.configure(str(log_file), to_stderr=False, max_bytes=2000, backups=2)
    try:
        for i in range(100):
            logs.get("plugkit.test").info("task_started", task_id=i, cwd="/w" * 20)
        sizes = {p.name: p.stat().st_size for p in tmp_path.iterdir()}
        assert set(sizes) == {"runner.log", "runner.log.1", "runner.log.2"}
        line = max(len(x) + 1 for x in (tmp_path / "runner.log.1").read_text().splitlines())
        assert all(size < 2000 + line for size in sizes.values())  # past the cap by one line at most
        assert '"task_id": 99' in log_file.read_text()
    finally:
        for handler in list(logging.getLogger().handlers):
            logging.getLogger().removeHandler(handler)
            handler.close()


def test_a_line_is_json_with_its_fields_and_no_secret_even_in_a_traceback(tmp_path):
    import json
    import logging

    logs.add_secret("s3cr3t-in-a-traceback")
    log_file = tmp_path / "runner.log"
    logs.configure(str(log_file), to_stderr=False)
    try:
        log = logs.get("plugkit.test")
        log.info("task_started", task_id=7, path=tmp_path)
        try:
            raise RuntimeError("failed with s3cr3t-in-a-traceback")
        except RuntimeError:
            log.exception("boom", token="anything")
        logging.getLogger("aiohttp.server").warning("a library's own %s", "line")
        first, second, third = (json.loads(line) for line in log_file.read_text().splitlines())
        assert first["event"] == "task_started" and first["task_id"] == 7 and first["path"] == repr(tmp_path)
        assert first["level"] == "info" and first["timestamp"].endswith("Z") and len(first["timestamp"]) == 27
        assert second["token"] == logs.REDACTED and "RuntimeError" in second["exception"]
        assert "s3cr3t" not in log_file.read_text()
        assert third == {"event": "a library's own line", "level": "warning", "timestamp": third["timestamp"]}
    finally:
        for handler in list(logging.getLogger().handlers):
            logging.getLogger().removeHandler(handler)
            handler.close()


def test_the_runner_boots_without_structlog_or_rich():
    # Each cost a cold start 0.1-0.4 s of imports (rich is pulled in wherever it is installed):
    # importing the runner pulls in neither; configure() imports structlog, and the daemon keeps
    # rich out of it. structlog then renders both sinks: JSON in the file, a readable line on stderr.
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", "import sys, runner.boot.serve, runner.boot.compose; "
                          "print(sorted(m for m in ('rich', 'structlog') if m in sys.modules))"],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    daemon = ("import sys, tempfile, json; from runner.system import logs; logs.keep_rich_out(); "
              "d = tempfile.mkdtemp(); logs.configure(d + '/runner.log', to_stderr=True); "
              "logs.get('plugkit.x').warning('port_held_retrying', port=7); "
              "print(json.loads(open(d + '/runner.log').read())['event'], sys.modules.get('rich'), "
              "type(logs.logging.getLogger().handlers[0].formatter).__module__)")
    done = subprocess.run([sys.executable, "-c", daemon], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["port_held_retrying", "None", "structlog.stdlib"]
    assert "[warning" in done.stderr and "port_held_retrying port=7" in done.stderr


async def test_a_deferred_line_is_written_after_the_answer_in_order(tmp_path):
    import asyncio
    import logging

    log_file = tmp_path / "runner.log"
    logs.configure(str(log_file), to_stderr=False)
    try:
        log = logs.get("plugkit.test")
        log.info_later("task_done", task_id=1)
        log.info_later("task_done", task_id=2)
        assert log_file.read_text() == ""  # nothing on the answer's path
        await asyncio.sleep(logs.LATER_S * 4)
        assert [line.count('"task_id": 1') for line in log_file.read_text().splitlines()] == [1, 0]
    finally:
        for handler in list(logging.getLogger().handlers):
            logging.getLogger().removeHandler(handler)
            handler.close()
