"""The digest's size is what the README says: at most digest.MAX_CHARS characters, cut at a
line end, whatever the project holds (here a project of many languages, scripts and dirs)."""

import json

from runner.core.search import digest


def test_a_large_project_digest_stays_within_its_cap_and_ends_on_a_whole_line(tmp_path):
    paths = []
    for i in range(400):
        for ext in ("py", "js", "go", "rs", "c", "java", "ts"):
            rel = f"pkg{i % 40}/sub{i}/mod_{i}.{ext}"
            (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / rel).write_text("x = 1\n")
            paths.append(rel)
    scripts = {f"task-{i}-{'y' * 60}": f"node build.js --step {i} {'z' * 80}" for i in range(40)}
    (tmp_path / "package.json").write_text(json.dumps({"scripts": scripts, "bin": {f"b{i}": f"bin/{i}.js"
                                                                                   for i in range(40)}}))
    text = digest.build(str(tmp_path), paths)
    assert len(text) <= digest.MAX_CHARS
    # The cut itself, where a root's own name is long enough to reach it: a whole line, then "...".
    cut = digest.build(str(tmp_path / ("d" * 3400)), paths)
    assert len(cut) <= digest.MAX_CHARS and cut.endswith("\n  ...")
    assert all(line.startswith(("project digest", "  ")) or line.endswith(":") for line in text.splitlines())
