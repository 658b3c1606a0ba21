"""Schemathesis, in-process over the app's own OpenAPI schema: no input may cause a server error."""

import tempfile

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from inferplan.shells.api import create_app

pytestmark = pytest.mark.slow

APP = create_app(tempfile.mkdtemp(prefix="inferplan-st-") + "/st.db")
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)


@schema.parametrize()
@settings(max_examples=8, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
def test_no_server_errors(case):
    case.call_and_validate(checks=[not_a_server_error])
