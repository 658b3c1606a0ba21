"""The sourced catalogue: schema (pydantic), loader (YAML → validated registries), Hugging Face
config import, catalogue cards as model specs, and the data files under ``data/`` (every number with a source,
a checked date and a kind). Nothing here computes a plan; everything else reads from here."""
