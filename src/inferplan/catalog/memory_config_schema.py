"""A memory configuration a chip is sold in (``Accelerator.memory_configurations``): its size and,
where a smaller bin has a narrower bus, its bandwidth, each with its source.

No postponed annotations here, as in ``schema.py``: pydantic builds the model from real types.
"""

from pydantic import ConfigDict

from inferplan.catalog.provenance import Bytes, BytesPerS
from inferplan.inputs import Input


class MemoryConfiguration(Input):
    """One configuration as sold: ``memory_bytes`` as marketed, and the bandwidth of the bin sold with
    it when the source gives one (None: the record's bandwidth)."""

    model_config = ConfigDict(defer_build=True)

    memory_bytes: Bytes
    memory_bandwidth_bytes_per_s: BytesPerS | None = None
