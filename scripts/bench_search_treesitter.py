#!/usr/bin/env python3
"""Does a tree-sitter grammar earn its place? The same judged-query eval as bench_search.py over a
JavaScript corpus every machine of this kind has (Debian's npm, /usr/lib/node_modules/npm: lib/
and bin/, its own node_modules skipped as vendored), once with today's JS chunking (30-line
windows, definitions by the DEFS pattern) and once cut at tree-sitter's definitions (functions,
classes, each method its own chunk, `const f = () => ...`).

Needs `pip install tree-sitter tree-sitter-javascript` (not a plugkit dependency: this script is
the evidence for leaving it out). Run: .venv/bin/python scripts/bench_search_treesitter.py"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_search import grep_ranking, mrr, ndcg10, plugkit_ranking  # noqa: E402
from runner.core.search import chunks  # noqa: E402
from runner.core.search.manager import SearchManager  # noqa: E402

CORPUS = "/usr/lib/node_modules/npm"
# query -> {relative path: grade}; methods (which today's DEFS pattern does not see) and prose too.
QUERIES = {
    "didYouMean": {"lib/utils/did-you-mean.js": 2},
    "otplease": {"lib/utils/auth.js": 2},
    "formatBytes": {"lib/utils/format-bytes.js": 2},
    "validateLockfile": {"lib/utils/validate-lockfile.js": 2},
    "ExitHandler": {"lib/cli/exit-handler.js": 2},
    "openLogFile": {"lib/utils/log-file.js": 2},
    "cleanLogs": {"lib/utils/log-file.js": 2},
    "handleProcessExit": {"lib/cli/exit-handler.js": 2},
    "renderFrame spinner": {"lib/utils/display.js": 2},
    "checkCachePermission": {"lib/commands/doctor.js": 2},
    "changeOwners": {"lib/commands/owner.js": 2},
    "fetchTags": {"lib/commands/dist-tag.js": 2},
    "getOutdatedInfo": {"lib/commands/outdated.js": 2},
    "convertVersionsToSpecs": {"lib/commands/diff.js": 2},
    "auditSignatures": {"lib/commands/audit.js": 2, "lib/utils/verify-signatures.js": 1},
    "open a url in the browser": {"lib/utils/open-url.js": 2},
    "update notifier new version": {"lib/cli/update-notifier.js": 2},
    "read one time password": {"lib/utils/read-user-info.js": 2},
    "sbom cyclonedx": {"lib/utils/sbom-cyclonedx.js": 2, "lib/commands/sbom.js": 1},
    "did you mean a command": {"lib/utils/did-you-mean.js": 2},
}
FUNCS = ("function_declaration", "generator_function_declaration")
VALUES = ("arrow_function", "function_expression", "function", "class", "generator_function")


def tree_sitter_cut():
    """chunks.cut with JS/TS files cut at tree-sitter's definitions."""
    import tree_sitter_javascript
    from tree_sitter import Language, Parser

    parser = Parser(Language(tree_sitter_javascript.language()))
    plain = chunks.cut

    def cut(path, text):
        if chunks.language(path) != "javascript":
            return plain(path, text)
        lines = text.splitlines()
        out, defs, covered = [], [], set()
        for node in parser.parse(text.encode()).root_node.children:
            node = node.child_by_field_name("declaration") or node if node.type == "export_statement" else node
            for name, first, last, body in _defs(node):
                defs.append(chunks.Definition(name, first, "def"))
                if body is None:  # a function: one chunk (windows when long)
                    out += chunks._windows(lines, first, last, {}, name) if last - first >= chunks.MAX_CHUNK else [
                        chunks.Chunk(first, last, name, "\n".join(lines[first - 1:last]))]
                    covered.update(range(first, last + 1))
                else:  # a class: each method its own chunk, the rest of the class one more
                    inner = set()
                    for m in body.children:
                        if m.type == "method_definition":
                            mname = m.child_by_field_name("name").text.decode().lstrip("#")
                            a, b = m.start_point[0] + 1, m.end_point[0] + 1
                            defs.append(chunks.Definition(mname, a, "def"))
                            out += chunks._windows(lines, a, b, {}, mname) if b - a >= chunks.MAX_CHUNK else [
                                chunks.Chunk(a, b, mname, "\n".join(lines[a - 1:b]))]
                            inner.update(range(a, b + 1))
                    own = [n for n in range(first, last + 1) if n not in inner]
                    if own:
                        out += chunks._windows(lines, own[0], min(own[-1], own[0] + chunks.MAX_CHUNK), {}, name)
                    covered.update(range(first, last + 1))
        gap = None
        for n in range(1, len(lines) + 2):
            if n <= len(lines) and n not in covered:
                gap = gap or n
            elif gap is not None:
                out += chunks._windows(lines, gap, n - 1, {})
                gap = None
        return out, defs

    return cut


def _defs(node):
    """(name, first line, last line, class body or None) of the definitions one top-level node makes."""
    first, last = node.start_point[0] + 1, node.end_point[0] + 1
    if node.type in FUNCS or node.type == "class_declaration":
        name = node.child_by_field_name("name")
        if name is not None:
            body = node.child_by_field_name("body") if node.type == "class_declaration" else None
            yield name.text.decode(), first, last, body
    elif node.type in ("lexical_declaration", "variable_declaration"):
        for d in node.children:
            value = d.child_by_field_name("value") if d.type == "variable_declarator" else None
            if value is not None and value.type in VALUES:
                body = value.child_by_field_name("body") if value.type == "class" else None
                yield d.child_by_field_name("name").text.decode(), first, last, body


def run(label: str) -> dict:
    with tempfile.TemporaryDirectory() as home:
        manager = SearchManager(home, semantic_layer=False)
        try:
            manager.workspace(CORPUS).prepare()
            manager.workspace(CORPUS).wait(600)
            ranked = {q: plugkit_ranking(manager, CORPUS, q) for q in QUERIES}
        finally:
            manager.close()
    return _scores(label, ranked)


def _scores(label: str, ranked: dict) -> dict:
    n = len(QUERIES)
    out = {"system": label, "ndcg@10": sum(ndcg10(ranked[q], j) for q, j in QUERIES.items()) / n,
           "mrr": sum(mrr(ranked[q], j) for q, j in QUERIES.items()) / n}
    print(f"{'npm (javascript)':<18} {label:<26} {out['ndcg@10']:>8.3f} {out['mrr']:>6.3f}")
    return out


def main() -> int:
    if not os.path.isdir(CORPUS):
        print(f"no JavaScript corpus at {CORPUS}: apt-get install npm")
        return 0
    print(f"{'corpus':<18} {'system':<26} {'NDCG@10':>8} {'MRR':>6}")
    run("plugkit (windows+pattern)")
    try:
        chunks.cut = tree_sitter_cut()
    except ImportError:
        print("tree-sitter not installed: pip install tree-sitter tree-sitter-javascript")
        return 0
    import runner.core.search.index as index_mod
    index_mod.chunks.cut = chunks.cut
    run("plugkit (tree-sitter)")
    _scores("grep -rl", {q: grep_ranking(CORPUS, q) for q in QUERIES})
    return 0


if __name__ == "__main__":
    sys.exit(main())
