"""The catalogue's lists run in a reader's order, not the files': accelerators the way a buyer scans
them (vendor, class — desk before data centre —, memory), models by family then size — in `inferplan
gpus`/`models`, `catalog list` and GET /api/catalog/KIND."""

from inferplan.catalog.list_order import CLASS_RANK, buyer_order, class_rank, model_order
from inferplan.catalog.query import list_entries


def test_every_catalogue_form_factor_has_a_class(catalog):
    assert {a.form_factor for a in catalog.accelerators} <= set(CLASS_RANK)


def test_the_listing_runs_by_vendor_then_class_then_memory(catalog):
    listed = list_entries("accelerators")
    assert {a.id for a in listed} == {a.id for a in catalog.accelerators}
    keys = [(a.vendor, class_rank(a.form_factor), a.memory_bytes.value) for a in listed]
    assert keys == sorted(keys)


def test_a_home_card_comes_before_a_data_centre_part_of_its_vendor(catalog):
    ids = [a.id for a in buyer_order(catalog.accelerators)]
    # in the files the RTX 4090 comes after the B200 and the 3090 after the 4090
    assert ids.index("rtx-3070") < ids.index("rtx-3090") < ids.index("rtx-4090") < ids.index("rtx-5090") \
        < ids.index("rtx-pro-6000-blackwell") < ids.index("h100-pcie") < ids.index("h100-sxm") < ids.index("b200") \
        < ids.index("gb200")
    assert ids.index("radeon-rx-7900-xtx") < ids.index("mi300x") < ids.index("mi355x")
    assert ids.index("apple-m4-max") < ids.index("apple-m3-ultra")


def test_a_form_factor_without_a_class_comes_last_of_its_vendor(catalog):
    b200 = catalog.accelerator("b200")
    odd = b200.model_copy(update={"id": "odd", "form_factor": "module-of-the-future"})
    assert [a.id for a in buyer_order([odd, b200])] == ["b200", "odd"]


def test_models_run_by_family_then_size(catalog):
    listed = list_entries("models")
    assert {m.id for m in listed} == {m.id for m in catalog.models}
    families = [m.family for m in listed]
    assert families == sorted(families)  # each family together
    ids = [m.id for m in listed]
    # in the files Qwen3-30B-A3B comes after Qwen3-32B and Gemma 2 after Gemma 4
    assert ids.index("qwen3-0.6b") < ids.index("qwen3-8b") < ids.index("qwen3-30b-a3b") < ids.index("qwen3-32b") \
        < ids.index("qwen3-235b-a22b") < ids.index("qwen3.8-2.4t-a95b")
    assert ids.index("gemma-3-12b") < ids.index("gemma-2-27b") < ids.index("gemma-4-31b")


def test_a_model_without_a_parameter_count_comes_last_of_its_family(catalog):
    v3 = next(m for m in catalog.models if m.id == "deepseek-v3")
    blank = v3.model_copy(update={"id": "deepseek-unsized", "total_params": None})
    ids = [m.id for m in model_order([blank, *catalog.models]) if m.family == "deepseek"]
    assert ids[-1] == "deepseek-unsized" and ids.index("deepseek-v3") < ids.index("deepseek-v4-pro")
