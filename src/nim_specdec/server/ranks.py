"""Which node does what in a multi-node launch (`--nnodes`), for GET /v1/metadata: pure, over vLLM's
parallel config.

vLLM orders its global ranks with the tensor-parallel rank fastest, then the pipeline stage
(`ensure_model_parallel_initialized` in vllm/distributed/parallel_state.py), and node N holds the ranks
N * local .. (N + 1) * local - 1 (`local_world_size`). Node 0 is the leader: the HTTP server and the
scheduler run there, and only there. The drafter (n-gram, suffix, a draft model, EAGLE heads) lives on
the ranks of the last pipeline stage (`gpu_model_runner.py`: "put the entire draft model on the last PP
rank"), so with pipeline parallelism across nodes the drafts are made on the last node.
"""

from __future__ import annotations

from typing import Any


def ranks_document(nnodes: int, tensor_parallel: int, pipeline_parallel: int, method: str | None) -> dict[str, Any]:
    """One entry per node: its role, its global ranks, their pipeline stages, whether it drafts."""
    world = tensor_parallel * pipeline_parallel
    nnodes = max(nnodes, 1)
    local = world // nnodes if world % nnodes == 0 and world >= nnodes else world
    last_stage = pipeline_parallel - 1
    nodes = []
    for node in range(nnodes):
        ranks = list(range(node * local, min((node + 1) * local, world)))
        stages = sorted({rank // tensor_parallel for rank in ranks})
        nodes.append(
            {
                "node_rank": node,
                "role": "leader" if node == 0 else "worker",
                "serves_http": node == 0,
                "schedules": node == 0,
                "global_ranks": ranks,
                "pipeline_stages": stages,
                "drafts": method is not None and last_stage in stages,
            }
        )
    return {
        "nnodes": nnodes,
        "tensor_parallel_size": tensor_parallel,
        "pipeline_parallel_size": pipeline_parallel,
        "nodes": nodes,
    }


def parallel_of(vllm_config: Any) -> tuple[int, int, int] | None:
    """(nnodes, tensor parallel, pipeline parallel) from vLLM's config, or None where the engine is not up."""
    parallel = getattr(vllm_config, "parallel_config", None)
    if parallel is None:
        return None
    try:
        return int(parallel.nnodes), int(parallel.tensor_parallel_size), int(parallel.pipeline_parallel_size)
    except (AttributeError, TypeError, ValueError):
        return None
