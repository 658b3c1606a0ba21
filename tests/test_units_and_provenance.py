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
