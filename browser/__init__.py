"""The browser runtime: judging in Pyodide, in a browser tab or under Node. The site only serves it.

    compat/   a numpy ``torch`` and a numpy ``safetensors`` reader, one pure-Python wheel (never installed
              beside real torch: only inside Pyodide)
    js/       the worker scripts (supervisor, worker, core, client, the Node runner) and the Python glue
    pins/     the pinned Pyodide runtime, wheels and tools, with their sha256
    build.py  builds the served tree into .cache/browser/site (``make browser``)
    node.py   judges in Pyodide from Python through the Node runner
    check.py  ``check --browser``: the exercises that list ``browser``, judged in Pyodide
"""
