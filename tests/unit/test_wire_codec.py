"""plugkit.codec (the wire's JSON) answers as json does, and keeps `plugkit exec:` free of json, re, socket and enum."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from plugkit import codec

ROOT = Path(__file__).resolve().parents[2]
DOCS = [
    {"jsonrpc": "2.0", "id": 7, "result": {"task": {"task_id": 3, "state": "completed", "exit_code": 0,
                                                    "cpu_s": 0.0021, "signal": None}}},
    {"text": "é ☃ 😀 \x00\x1b[31m\r\n\t\"quoted\" \\ back", "big": 10 ** 30, "neg": -0.0, "f": 1e-7},
    [], {}, [[[]]], "bare", 0, -12, 3.5, True, False, None, [1.5e300, -2], {"": ""},
]


@pytest.mark.parametrize("doc", DOCS)
def test_encodes_and_decodes_exactly_as_json_does(doc):
    text = json.dumps(doc)
    assert codec.dumps(doc) == text
    assert codec.loads(text) == json.loads(text)
    assert codec.loads(f" \n{text}\t\r ") == json.loads(text)
    assert codec.loads(text.encode()) == json.loads(text)


def test_non_finite_numbers_pass_as_json_passes_them():
    assert codec.dumps([float("inf"), float("-inf")]) == json.dumps([float("inf"), float("-inf")])
    assert math.isnan(codec.loads("NaN")) and codec.loads("[Infinity, -Infinity]") == [math.inf, -math.inf]


@pytest.mark.parametrize("bad", ["", "  ", "{", "{}x", "[1,]", "nul", '{"a" 1}', "[1] [2]", '"unterminated'])
def test_rejects_what_json_rejects_with_a_value_error(bad):
    with pytest.raises(ValueError):
        json.loads(bad)
    with pytest.raises(ValueError):
        codec.loads(bad)


def test_refuses_objects_json_cannot_encode():
    with pytest.raises(TypeError):
        codec.dumps({"a": object()})


def test_the_exec_hot_path_imports_neither_json_re_socket_nor_enum():
    probe = ("import sys; import client.cli, client.verbs.exec, client.wire.session; "
             "print(' '.join(sorted(m for m in ('json', 're', 'socket', 'enum', 'selectors') if m in sys.modules)))")
    found = subprocess.run([sys.executable, "-S", "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert found.stdout.split() == []



def test_malformed_text_is_a_value_error_in_a_process_without_json():
    # The C scanner raises its errors through json.decoder: in this test's process `json` is
    # imported, in the client's it is not, and there it raised SystemError (a damaged port file
    # read as an internal error). A fresh process, as the client is.
    probe = ("from plugkit import codec\n"
             "for text in ['{not json', '{\"port\": 1', '{\"port\": \"x\"', '\"\\\\x\"', '[1, 2', '{', 'tru']:\n"
             "    try:\n"
             "        codec.loads(text)\n"
             "    except ValueError:\n"
             "        continue\n"
             "    raise SystemExit('accepted ' + repr(text))\n"
             "import sys; print('json' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr[-800:]
