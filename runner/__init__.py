"""The GPU runner: pulls queued submissions from the site over HTTP(S) and judges each in a sandbox.

``python -m runner --server URL --token T`` (see ``runner/__main__.py``). It talks to the site only over
HTTP (``runner.client``), never to the database; it judges with the ``judge`` package, inside a fresh
Docker container per job (``runner.containers``) or, for development, a local subprocess.
"""
