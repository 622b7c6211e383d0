"""The planner: its part of the settings and the sources' facts merged into a typed plan and the vLLM command. No I/O.

The entry point is build.build_plan. The sub-packages, lowest first (each imports only those above it in this
list, and none imports the modules directly in plan/; tests/contract/test_import_contract.py checks it):

engine/                 the engine: what the vLLM release accepts, which runner and modes it settles, caches, preloads
  vllm_schema.py        what each supported release's command line and SpeculativeConfig accept (VllmKnowledge)
  vllm_schemas/         the snapshots vllm_schema.py reads, one <version>.json per release (package data)
  release_changes.py    what each release removed, deprecated or added in the speculative config, in one line
  engine_facts.py       the engine a plan assumes: the vLLM release and the device (the plan's `engine`)
  engine_numbers.py     numeric engine arguments, checked in the forms vLLM's parser takes
  runner_choice.py      which model runner (V1 or V2) vLLM will serve with, by release and platform
  graph_modes.py        the CUDA graph and compilation modes vLLM settles from the engine arguments
  async_rules.py        where vLLM refuses async scheduling asked on, by release and runner
  compile_dirs.py       where vLLM's start-up caches go under NIM_CACHE_PATH, and their key (`compile_cache`)
  cpu_preload.py        LD_PRELOAD for the CPU build: tcmalloc and Intel OpenMP (`cpu_preload`)
schedule/               the K schedule: checked as vLLM checks it, and its fate on the runner engine/ picks
  spec_schedule.py      num_speculative_tokens_per_batch_size: its entries checked and described
  schedule_rules.py     where vLLM drops a schedule silently, or keeps it at the cost of full CUDA graphs
  runner_plan.py        the plan's `model_runner`: the runner, and the schedule refused or kept with a warning
argv/                   the engine arguments: the user's read, merged by layer, resolved, and our command written
  user_args.py          the user's vLLM arguments (command line, NIM_PASSTHROUGH_ARGS) read as vLLM reads them
  merge.py              the layers folded, lowest precedence first, with where each key came from (the NIM
                        variables' layer from EngineVariables); keys the launcher sets itself refused
  engine_view.py        the resolved engine arguments as plain values, for the checks and for people
  engine_command.py     the vLLM command the launcher execs: program, model, arguments, speculative config
  command_view.py       the served names and speculative config read back from that command
method/                 the speculative method: the target, the method and why, its config checked, its draft
  builtin.py            the built-in configs (configs/builtin_specdec/): one entry per supported model
  target.py             which model is served, from where, under which name, in which mode
  method_choice.py      the guide's order: MTP heads, else a published EAGLE3 draft, else n-gram
  method_infer.py       the method vLLM infers from a draft when the config names none
  spec_schema.py        the speculative_config checked against the release's schema (keys, kinds, bounds)
  spec_rules.py         vLLM's cross-field rules for the speculative config
  draft.py              which draft checkpoint the config refers to, and where it is linked
  arctic.py             ARCTIC_INFERENCE_ENABLED=1 refused before anything starts
build.py                the entry point: build_plan, the whole plan from its input, the arguments and the facts
plan_input.py           what the plan is built from of the settings (PlannerInput), made at the command's edge
plan_front.py           the plan's first half, run alone while facts are gathered: arguments, target, config, draft
plan_facts.py           what the shell knows when it builds a plan (Facts): built-ins, vLLM, device, sources
plan_model.py           the plan as an immutable typed value (Plan), its public JSON and its JSON Schema
plan_sections.py        the sections later steps fill in: the pre-flight checks, vLLM's own check, what is exec'd
"""
