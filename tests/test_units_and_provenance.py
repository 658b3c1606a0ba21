import pytest
from pydantic import ValidationError

from inferplan.catalog.provenance import Bytes, BytesPerS, FlopPerS
from inferplan.units import GB, GiB


def test_units_convert_to_si():
    assert Bytes(value=80, unit="GB", kind="spec", source="x").value == 80 * GB
    assert Bytes(value=1, unit="GiB", kind="measured", source="x").value == GiB
    assert BytesPerS(value=3.35, unit="TB/s", kind="spec", source="x").value == pytest.approx(3.35e12)
    assert FlopPerS(value=989.4, unit="TFLOPS", kind="spec", source="x").value == pytest.approx(989.4e12)


def test_unit_of_wrong_dimension_is_rejected():
    with pytest.raises(ValidationError, match="measures bytes_per_s"):
        Bytes(value=3.35, unit="TB/s", kind="spec", source="x")


def test_plain_number_is_rejected_as_unsourced():
    with pytest.raises(ValidationError, match="needs a source"):
        Bytes.model_validate(80)


def test_kind_and_source_are_required():
    with pytest.raises(ValidationError):
        Bytes.model_validate({"value": 80, "unit": "GB", "source": "x"})
    with pytest.raises(ValidationError):
        Bytes.model_validate({"value": 80, "unit": "GB", "kind": "spec"})
    with pytest.raises(ValidationError):
        Bytes.model_validate({"value": 80, "unit": "GB", "kind": "guess", "source": "x"})


def test_a_yaml_yes_or_a_string_is_not_a_number():
    # with a unit, "80" used to skip the conversion and load as 80 bytes
    for value in (True, "80"):
        for unit in ({"unit": "GB"}, {}):
            with pytest.raises(ValidationError, match="not a number|valid number"):
                Bytes.model_validate({"value": value, "kind": "spec", "source": "x", **unit})
    assert Bytes.model_validate({"value": 80, "unit": "GB", "kind": "spec", "source": "x"}).value == 80e9


def test_negative_and_infinite_values_are_rejected():
    with pytest.raises(ValidationError):
        Bytes(value=-1, kind="spec", source="x")
    with pytest.raises(ValidationError):
        Bytes(value=float("inf"), kind="spec", source="x")


@pytest.mark.parametrize(("value", "text"), [(100_000_000, "100,000,000"), (1e8, "100,000,000"), (1e12, "1,000,000,000,000"),
                                             (0.5, "0.5"), (1e-7, "0.0000001"), (40960, "40,960"), (2.50, "2.5")])
def test_a_number_is_written_one_way_never_in_exponent_notation(value, text):
    from inferplan.units import plain_number

    assert plain_number(value) == text


@pytest.mark.parametrize(("name", "unit"), [
    ("ttft_p95_s", "s"), ("request_rate_per_s", "/s"), ("host_memory_gb", "GiB"),
    ("host_memory_bandwidth_gb_per_s", "GB/s"), ("gpu_memory_utilization", "ratio"), ("prefix_cache_hit_rate", "ratio"),
    ("max_power_w", "W"), ("users", None), ("kv_offloading_size", None),
])
def test_a_name_s_unit_is_the_longest_suffix_it_ends_in(name, unit):
    from inferplan.units import name_unit

    assert name_unit(name) == unit


@pytest.mark.parametrize(("number", "typed", "unit", "value"), [
    (500, "ms", "s", 0.5), (90, "percent", "ratio", 0.9), (80, "GB", "GiB", 74.51), (80, "GiB", "GiB", 80),
    (1, "kW", "W", 1000), (80, "GB", "s", None), (2, "W", "/s", None),
])
def test_a_typed_number_converts_only_between_units_of_one_kind(number, typed, unit, value):
    from inferplan.units import in_unit

    assert in_unit(number, typed, unit) == value


@pytest.mark.parametrize(("written", "unit"), [("ms", "ms"), ("MS", "ms"), ("gib", "GiB"), ("%", "percent"),
                                               ("gb/s", None), ("parsecs", None)])
def test_a_unit_as_typed_is_read_in_any_case_unless_that_is_ambiguous(written, unit):
    from inferplan.units import typed_unit

    assert typed_unit(written) == unit


def test_a_written_number_with_no_unit_or_a_multiplier_gets_no_unit_hint():
    from inferplan.units import unit_hint

    assert unit_hint("128k", "max_model_len") is None and unit_hint("0.5", "ttft_p95_s") is None
    assert unit_hint("300W", "max_power_w").endswith("e.g. 300 (300W in W)")
