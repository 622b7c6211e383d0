"""The top of tune.md: what each server ran on, the engine that will serve, and what differs between them."""

from __future__ import annotations

from typing import Any, Mapping

from nim_specdec_lab.tune.engines.device import describe_device
from nim_specdec_lab.tune.engines.engine import FIELDS


def _on_off(value: Any) -> str:
    return {True: "on", False: "off"}.get(value, str(value))


def engine_lines(result: Mapping[str, Any]) -> list[str]:
    """Markdown lines (ending with a blank one); none for a result without engine records."""
    servers = [s for s in result.get("servers", []) if s.get("engine")]
    summary = result.get("engine")
    if not servers and not summary:
        return []
    lines = ["## What this was measured on", ""]
    devices = sorted({describe_device(s["engine"]["device"]) for s in servers})
    if devices:
        lines += [f"Device: {'; '.join(devices)}.", ""]
    lines += [
        "| server | vLLM | platform | model runner | CUDA graphs | async scheduling |",
        "|---|---|---|---|---|---|",
    ]
    for server in servers:
        e = server["engine"]
        lines.append(
            f"| {server['name']} | {e['vllm_version']} | {e['platform']} | {e['runner'].upper()} | "
            f"{e['cudagraph_mode']} | {_on_off(e['async_scheduling'])} |"
        )
    if servers:
        by_source: dict[str, list[str]] = {}
        for server in servers:
            for key in ("device",) + FIELDS:
                by_source.setdefault(server["engine"]["sources"][key], [])
                if key not in by_source[server["engine"]["sources"][key]]:
                    by_source[server["engine"]["sources"][key]].append(key)
        lines += ["", "Sources: " + "; ".join(f"{src}: {', '.join(keys)}" for src, keys in by_source.items()) + "."]
    if summary:
        serving = summary["serving"]
        lines += [
            "",
            f"Serving engine: vLLM {serving['vllm_version']} on {serving['platform']}, "
            f"{serving['runner'].upper()} model runner ({serving['reason']})"
            + (f", CUDA graphs {serving['cudagraph_downgrade']}" if serving.get("cudagraph_downgrade") else "")
            + ".",
        ]
        if summary.get("schedule_fallback"):
            lines += ["", f"- {summary['schedule_fallback']}"]
        differences = summary.get("differences") or []
        lines += [""] + (
            [f"- {d}" for d in differences]
            if differences
            else ["The serving engine is the one measured: the figures below apply to it."]
        )
    return lines + [""]
