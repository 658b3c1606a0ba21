"""Thin shells over the library: the CLI (typer + rich), the HTTP API (FastAPI) and the web page
(static HTML/JS that only calls the API). No planning arithmetic lives here."""
