"""inferplan: plan self-hosted open-weight LLM deployments from sourced data.

The package is layered; each layer imports only the ones below it (``tests/test_layering.py``):

- ``units``, ``errors``, ``inputs``: SI unit constants, the error hierarchy, and the stated inputs
  every layer shares (``Deployment``, ``Workload``).
- ``catalog``: sourced reference data (accelerators, systems, models, engines) and model import.
- ``memory``: what fits, and how much is left for the KV cache.
- ``performance``: TTFT, TPOT and throughput.
- ``economics``: users carried, costs, payback and the route recommendation for a ``Scenario``.
- ``scenario``: scenario files (YAML read into a ``Scenario``).
- ``report``, ``store``: formatted results and reports; saved scenarios and quotes.
- ``shells``: the CLI, the HTTP API and the web page (thin: parse, call one library function, render).

``validation`` scores predictions against the measured points and runs the fits; it imports
``catalog`` … ``economics``, and only the shells import it. Each package's README says what it
owns and how to add to it.
"""

__version__ = "0.1.0"
