"""inferplan: plan self-hosted open-weight LLM deployments from sourced data.

The package is layered; each layer imports only the ones below it:

- ``units``, ``errors``: SI unit constants and the error hierarchy.
- ``catalog``: sourced reference data (accelerators, systems, models, engines) and model import.
- ``memory``: what fits, and how much is left for the KV cache.
- ``validation``: predictions against the measured points shipped in the catalogue.
- ``shells``: the CLI (thin: parse, call one library function, render).
"""

__version__ = "0.1.0"
