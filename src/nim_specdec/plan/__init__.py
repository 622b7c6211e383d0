"""The planner: its part of the settings and the sources' facts merged into a typed plan and the engine's command.
No I/O. What an engine knows (vLLM's releases, arguments, command) lives in engines/.

The entry point is build.build_plan. The sub-packages, lowest first (each imports only those above it in this
list, and none imports the modules directly in plan/; tests/contract/test_import_contract.py checks it):

method/                 the speculative method: the target, the method and why, its config checked, its draft
  builtin.py            the built-in configs (configs/builtin_specdec/): one entry per supported model
  target.py             which model is served, from where, under which name, in which mode
  method_choice.py      the guide's order: MTP heads, else a published EAGLE3 draft, else n-gram
  draft.py              which draft checkpoint the config refers to, and where it is linked
merge.py                the layers folded, lowest precedence first, with where each key came from (the NIM
                        variables' layer from config.engine_variables); keys the launcher sets itself refused
build.py                the entry point: build_plan, the whole plan from its input, the arguments and the facts
plan_input.py           the settings' sections the plan reads (PlannerInput), each as the settings hold it
plan_front.py           what was asked, settled: arguments, target, merged config, draft (names the sources)
plan_facts.py           what the shell knows when it builds a plan (Facts): built-ins, vLLM, device, sources
plan_model.py           the plan as an immutable typed value (Plan), its public JSON and its JSON Schema
plan_sections.py        the sections later steps fill in: the pre-flight checks, vLLM's own check, what is exec'd
"""
