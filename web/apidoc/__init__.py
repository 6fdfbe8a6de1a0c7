"""The OpenAPI description of the site's JSON API, one module per area; ``web/openapi.py`` gathers them.

Each area module has ``PATHS`` (OpenAPI path items keyed by the full path) and ``SCHEMAS`` (components).
"""
