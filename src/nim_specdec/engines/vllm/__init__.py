"""vLLM, the engine: everything the launcher knows about it, as versioned data and pure rules, and the process it
serves in. It stands below plan/, which asks it through engines/protocol/ only. The sub-packages, lowest first
(each imports only those above it in this list; tests/contract/test_import_contract.py checks it):

release/                what each vLLM release accepts, which runner and modes it settles, caches, preloads
  vllm_schema.py        what each supported release's command line and SpeculativeConfig accept (VllmKnowledge)
  vllm_schemas/         the snapshots vllm_schema.py reads, one <version>.json per release (package data)
  methods.py            the speculative methods, one row each: every trait the rules read (docs/engine.md)
  release_changes.py    what each release removed, deprecated or added in the speculative config, in one line
  engine_numbers.py     numeric engine arguments, checked in the forms vLLM's parser takes
  runner_choice.py      which model runner (V1 or V2) vLLM will serve with, by release and platform
  graph_modes.py        the CUDA graph and compilation modes vLLM settles from the engine arguments
  async_rules.py        where vLLM refuses async scheduling asked on, by release and runner
  compile_dirs.py       where vLLM's start-up caches go under NIM_CACHE_PATH, and their key (`compile_cache`)
  cpu_preload.py        LD_PRELOAD for the CPU build: tcmalloc and Intel OpenMP (`cpu_preload`)
  host_vars.py          vLLM's own variables the plan depends on (VllmHost), read from the installation's
schedule/               the K schedule: checked as vLLM checks it, and its fate on the runner release/ picks
  spec_schedule.py      num_speculative_tokens_per_batch_size: its entries checked and described
  schedule_rules.py     where vLLM drops a schedule silently, or keeps it at the cost of full CUDA graphs
  runner_plan.py        the plan's `model_runner`: the runner, and the schedule refused or kept with a warning
argv/                   the engine arguments: the user's read as vLLM reads them, resolved, and the command written
  user_args.py          the user's vLLM arguments (command line, NIM_PASSTHROUGH_ARGS) read as vLLM reads them
  engine_view.py        the resolved engine arguments as plain values, for the checks and for people
  engine_command.py     the vLLM command the launcher execs: program, model, arguments, speculative config
  command_view.py       the served names and speculative config read back from that command
spec/                   the speculative config as vLLM reads it
  method_infer.py       the method vLLM infers from a draft when the config names none
  spec_schema.py        the speculative_config checked against the release's schema (keys, kinds, bounds)
  spec_rules.py         vLLM's cross-field rules for the speculative config
  arctic.py             ARCTIC_INFERENCE_ENABLED=1 refused before anything starts
observe/                a running vLLM server read
  spec_counters.py      vLLM's spec-decode counters (Prometheus), the acceptance figures made of them, and
                        the NIM endpoints it serves behind (SERVING: readiness, health, metrics)
check/                  vLLM's own check of the command line: the request, vLLM's verdict, when it runs
  request.py            the command vLLM judges, with the sources' workspace paths as local directories
  judge.py              vLLM's verdict, from its own argument parser and config classes
  gate.py               when the launcher runs the check (now, deferred to the server's process, not at all)
boot/                   the process vLLM serves in
  vllm_boot.py          the server's process: vLLM's check, the ranks watched, vLLM's exit status kept
  rank_watch.py         a headless rank of a multi-node launch stops by itself when its leader is gone
  vllm_serve.py         `vllm serve` with the NIM endpoints, run by vllm_boot as `__main__`
engine.py               VllmEngine: vLLM as the planner asks it (engines.protocol), over a release and this machine
"""
