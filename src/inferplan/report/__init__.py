"""Reports: Vega-Lite chart specs (shared with the web page) and self-contained HTML/Markdown."""
