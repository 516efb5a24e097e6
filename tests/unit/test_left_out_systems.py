"""The embedded comparison (`evaluate` with no system, `make demo`) names every registered
system it does not run, with a reason that fits the system and the setting."""

from __future__ import annotations

import pytest

from apmbench.adapters.systems import SYSTEM_REGISTRY, SYSTEMS, compared_systems, left_out


@pytest.mark.parametrize(
    "environ",
    [{}, {"APMBENCH_VLM_API_BASE": "http://h/v1"}, {"APMBENCH_VLM_MODEL": "/models/q"}],
    ids=["no model", "endpoint", "local model"],
)
@pytest.mark.parametrize("benchmark", ["apmbench", "egoprobe", "proactegomem"])
def test_every_system_is_compared_or_named_with_a_reason(
    environ: dict[str, str], benchmark: str
) -> None:
    compared = compared_systems(environ, benchmark)
    out = left_out(benchmark, environ)
    assert all(benchmark in SYSTEMS[name].benchmarks for name in compared)
    assert set(compared) | set(out) == set(SYSTEM_REGISTRY.names())
    assert not set(compared) & set(out)
    assert all(len(why) > 20 for why in out.values()), out


def test_the_reasons_say_what_is_missing() -> None:
    out = left_out("apmbench", {})
    assert "APMBENCH_VLM_MODEL" in out["vlm-simplestream"]
    assert "APMBENCH_VLM_API_BASE" in out["vlm-simplestream"]
    # The specialised memories read the model's own caches: no endpoint will do.
    assert "APMBENCH_VLM_API_BASE" not in out["kv-memory"]
    assert "overhead" in out["null"] and "slow by design" in out["model-sim"]
    assert out["proact-rules"] == "it answers only proactegomem, not apmbench"
    # On its own suite proact-rules is compared, and the systems that do not answer it
    # are not.
    assert compared_systems({}, "proactegomem") == ("proact-rules",)
    proact = left_out("proactegomem", {})
    assert "proact-rules" not in proact
    assert proact["text-log"] == "it answers only apmbench, egoprobe, not proactegomem"
    # With an endpoint the general VLM systems join; the specialised ones still wait.
    endpoint = left_out("apmbench", {"APMBENCH_VLM_API_BASE": "http://h/v1"})
    assert "vlm-simplestream" not in endpoint and "kv-memory" in endpoint
    assert all(not SYSTEMS[name].not_compared for name in compared_systems({}))
