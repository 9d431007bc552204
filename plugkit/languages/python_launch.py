"""How `exec:python` runs the code file: as `python -c` runs code, not as a script in the
runner's temp dir. So `import mymodule` finds the caller's cwd first (sys.path[0] is '' for
-c, where a script gets its own directory: the temp dir), and a traceback names the code
`<exec:python>` with its lines, not a temp path that means nothing to the reader. sys.argv,
__file__ and __name__ are what a script would see; the launcher leaves no name behind."""

LAUNCHER = """\
def _plugkit_run():
    import linecache, sys
    path = sys.argv[1]
    with open(path, encoding="utf-8", errors="surrogateescape") as fh:
        src = fh.read()
    name = "<exec:python>"
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    main = sys.modules["__main__"]
    main.__file__ = path
    sys.argv[:] = sys.argv[1:]
    code = compile(src, name, "exec")
    del main.__dict__["_plugkit_run"]
    try:
        exec(code, main.__dict__)
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as exc:
        exc = exc.with_traceback(exc.__traceback__.tb_next)  # from the code's own first frame
        if sys.excepthook is sys.__excepthook__:  # the C hook reads source by file name, not linecache
            import traceback
            traceback.print_exception(exc)
        else:
            sys.excepthook(type(exc), exc, exc.__traceback__)
        sys.exit(1)
_plugkit_run()
"""
