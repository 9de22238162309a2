"""Property-based fuzzing of every operation in /openapi.json (schemathesis, a bounded number
of examples, both schema-conforming and not): no input makes the server answer 5xx.

The spec refuses every remote host (``allowed_domains: []``), so a generated URL is refused
before any lookup: the fuzzer never makes the server contact anything. Every answer is also
checked for what must never leak to a client: a traceback or a path inside the installation."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from srv_helpers import FamilySetup, HostLoop

from sglang_mm_core.server import MmServer

# A local Ray cluster, load or fuzzing: `make test` runs it, `make check` does not.
pytestmark = pytest.mark.slow

MAX_EXAMPLES = 30
# What only a traceback or an internal error message would carry.
LEAKS = (
    "Traceback (most recent call last)",
    'File "',
    "site-packages",
    "/sglang_mm_core/",
    sys.prefix,
)


@schemathesis.check
def no_internals(ctx: Any, response: Any, case: Any) -> None:
    """The answer names no traceback, source file or installation path."""
    text = response.content.decode("utf-8", "replace")
    found = [leak for leak in LEAKS if leak in text]
    if found:
        raise AssertionError(f"the answer leaks {found}: {text[:300]!r}")


@pytest.fixture(scope="module")
def fuzzed_server(fam: FamilySetup) -> Iterator[MmServer]:
    spec = fam.spec(fetch={"allowed_domains": []})
    srv = MmServer.launch(spec, "127.0.0.1:0", registry=fam.registry, deadline_s=20)
    with HostLoop(srv, lambda batch, i: (b"host answer", "text/plain")):
        yield srv
    srv.shutdown(timeout_s=5)


def test_no_input_makes_a_5xx(fuzzed_server: MmServer) -> None:
    schema = schemathesis.openapi.from_url(fuzzed_server.url + "/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    paths = {op.path for op in operations}
    assert {"/v1/preprocess", "/v1/tokens", "/v1/submit", "/health", "/metrics"} <= paths
    for operation, mode in itertools.product(operations, GenerationMode):
        if mode is GenerationMode.NEGATIVE and operation.method.upper() == "GET":
            continue  # nothing to get wrong: no parameters, no body

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=MAX_EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def fuzz(case: Any) -> None:
            response = case.call(timeout=30)
            case.validate_response(response, checks=[not_a_server_error, no_internals])

        fuzz()
    text = requests.get(fuzzed_server.url + "/metrics", timeout=10).text
    answered = sum(
        float(line.split()[-1])
        for line in text.splitlines()
        if line.startswith("sglang_mm_requests_total{")
    )
    assert answered >= 4 * len(operations)  # the fuzzer did reach the server
    assert 'status="5' not in text
