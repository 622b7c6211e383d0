"""The server's own timing means from two /metrics scrapes, and the client's share of a closed loop."""

from __future__ import annotations

import pytest
from test_bench_report import ON_SPEC, m

from nim_specdec.observe.server_timings import client_busy_share, histogram_totals, server_means
from nim_specdec_lab.bench.compare import compare
from nim_specdec_lab.bench.report_md import markdown


def scrape(ttft=(0.0, 0), tpot=(0.0, 0), e2e=(0.0, 0), engines=1) -> str:
    """vLLM's exposition of the three histograms (one bucket each is enough for the means), per engine."""
    lines = []
    for family, (total, count) in (
        ("vllm:time_to_first_token_seconds", ttft),
        ("vllm:request_time_per_output_token_seconds", tpot),
        ("vllm:e2e_request_latency_seconds", e2e),
    ):
        lines += [f"# HELP {family} x", f"# TYPE {family} histogram"]
        for engine in range(engines):
            labels = f'engine="{engine}",model_name="demo"'
            lines += [
                f'{family}_bucket{{{labels},le="+Inf"}} {count / engines}',
                f"{family}_count{{{labels}}} {count / engines}",
                f"{family}_sum{{{labels}}} {total / engines}",
            ]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    "before, after, expected",
    [
        # 12 requests between the scrapes: sums grew by 0.12 s (TTFT), 0.024 s (TPOT), 1.8 s (latency).
        (
            scrape((1.0, 4), (0.01, 4), (2.0, 4)),
            scrape((1.12, 16), (0.034, 16), (3.8, 16)),
            {"ttft_mean_s": 0.01, "tpot_mean_s": 0.002, "latency_mean_s": 0.15, "requests": 12},
        ),
        # Summed over engines.
        (
            scrape(engines=2),
            scrape((0.2, 4), (0.04, 4), (2.0, 4), engines=2),
            {"ttft_mean_s": 0.05, "tpot_mean_s": 0.01, "latency_mean_s": 0.5, "requests": 4},
        ),
        # No request finished in between: no means, rather than 0/0.
        (scrape((1.0, 4), (0.01, 4), (2.0, 4)), scrape((1.0, 4), (0.01, 4), (2.0, 4)), {}),
        # A server without the histograms (another exporter).
        ("", "", {}),
    ],
)
def test_server_means(before, after, expected):
    got = server_means(before, after)
    assert got.keys() == expected.keys() and all(got[k] == pytest.approx(v) for k, v in expected.items())


def test_histogram_totals_ignore_buckets_and_other_families():
    text = scrape((3.0, 6)) + "# TYPE vllm:generation_tokens counter\nvllm:generation_tokens_total 99\n"
    assert histogram_totals(text)["vllm:time_to_first_token_seconds"] == (3.0, 6)


@pytest.mark.parametrize(
    "latency, requests, duration, concurrency, expected",
    [
        (0.1, 12, 2.0, 1, 0.6),  # 1.2 s of 2 s inside requests
        (0.5, 12, 2.0, 4, 0.75),  # four in flight
        (0.2, 12, 2.0, 1, 1.0),  # clipped: latencies can overlap the duration's ends
        (None, 12, 2.0, 1, None),
        (0.1, 0, 2.0, 1, None),
        (0.1, 12, 0.0, 1, None),
    ],
)
def test_client_busy_share(latency, requests, duration, concurrency, expected):
    got = client_busy_share(latency, requests, duration, concurrency)
    assert got == (None if expected is None else pytest.approx(expected))


def test_report_shows_server_means_tpot_ratio_and_an_idle_client():
    off = m(100.0, concurrency=1)
    off = type(off)(
        **{
            **off.__dict__,
            "server_means": {"ttft_mean_s": 0.01, "tpot_mean_s": 0.004, "latency_mean_s": 0.26},
            "client_busy_share": 0.55,
        }
    )
    on = m(180.0, concurrency=1, spec=ON_SPEC)
    on = type(on)(
        **{
            **on.__dict__,
            "server_means": {"ttft_mean_s": 0.01, "tpot_mean_s": 0.002, "latency_mean_s": 0.13},
            "client_busy_share": 0.95,
        }
    )
    report = compare({"off": {"t": off}, "on": {"t": on}})
    (row,) = report["rows"]
    assert row["tpot_ratio"] == pytest.approx(2.0)
    assert row["off"]["server_means"]["tpot_mean_s"] == 0.004 and row["on"]["client_busy_share"] == 0.95
    (warning,) = [w for w in report["warnings"] if "in flight for" in w]
    assert warning.startswith("t off: requests were in flight for 55%")
    text = markdown(report)
    assert "| 10.00 / 4.00 / 260.00 |" in text and "Server time per output token, off / on: t 2.000." in text


@pytest.mark.parametrize(
    "means, concurrency, ok, schedule, expected",
    [
        ({"latency_mean_s": 0.25}, 1, 12, "closed", 1 * (400 / 12) / 0.25),  # 400 output tokens over 12 requests
        ({"latency_mean_s": 0.25}, 4, 12, "closed", 4 * (400 / 12) / 0.25),  # four in flight all along
        ({"latency_mean_s": 0.25}, 4, 12, "timestamps", None),  # an open loop has no fixed number in flight
        ({"tpot_mean_s": 0.01}, 1, 12, "closed", None),  # no latency from the server
        ({"latency_mean_s": 0.25}, 1, 0, "closed", None),  # nothing answered
    ],
)
def test_server_tokens_per_s(means, concurrency, ok, schedule, expected):
    run = m(100.0, concurrency=concurrency)
    run = type(run)(
        **{**run.__dict__, "server_means": means, "ok_count": ok, "output_tokens": 400, "schedule": schedule}
    )
    assert run.server_tokens_per_s == (None if expected is None else pytest.approx(expected))
    assert run.to_json()["server_tokens_per_s"] == run.server_tokens_per_s
