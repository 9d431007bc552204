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
