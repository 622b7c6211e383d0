"""SGLang 0.5 at the plan level: the guide's variables and vLLM-form speculative configs written as SGLang's
command, checked by SGLang's own argument resolution. Everything but the functions marked shell is pure.

The modules, lowest first (each imports only those above it):

options.py              SGLang's server options from the release's snapshot (sglang_options/<release>.json)
  sglang_options(release=RELEASE) -> Mapping[str, Option]; spelling_of(dest) -> str; RELEASE = "0.5.23"
methods.py              the method table: a row per vLLM-form method (eagle3 -> EAGLE3, mtp -> EAGLE, ...)
  METHODS; method_row(method, where) -> SglangMethod (ConfigError for a method SGLang lacks);
  k_flags(row, k) -> ((option, value), ...); same_algorithm(a, b) -> bool (NEXTN is EAGLE)
native_args.py          the user's arguments read as SGLang's parser reads them
  read_native_args(argv, where) -> NativeArgs(speculative, model_path, vllm_config, other, options)
translation.py          the vLLM-form config as SGLang flags, the user's SGLang flags over them
  check_layer(config, where) -> dict (one layer's refusals);
  translate_config(config: Mapping) -> SpeculativeFlags(fields, notes); SpeculativeFlags.argv() -> tuple[str, ...]
  merge_native(translated: SpeculativeFlags | None, native: NativeArgs) -> SpeculativeFlags
engine_args.py          the NIM variables' engine arguments (vLLM's names), NIM_SPECDEC_ARGS' keys: SGLang's options
  lower_args(lower, origin) -> LowerArgs(port, served_model_name, argv, notes)
command.py              the command: python -m sglang.launch_server --model-path M --host H --port P ...
  launch_command(python, model_path, host, port, served_model_name, speculative, other) -> tuple[str, ...]
  server_arguments(command) -> tuple[str, ...] (what SGLang's parser reads of it)
installed.py            whether SGLang can be served here, and the refusal where it cannot
  serve_python(python, release) -> str (ConfigError naming NIM_ENGINE); installed_release() -> str | None,
  release_beside(python) -> str | None, installation(python) -> Installation (shell: SGLANG_PYTHON's, else this one)
resolution.py           SGLang's own resolution as the check, and the values it would change silently
  run_resolver(python, argvs, timeout=300, device="cpu") -> tuple[Resolution, ...] (shell: runs resolver_child.py);
  check_argv(server_args, device="cpu") -> argv (device None: as given); parse_resolutions(text, count);
  platform_refusal(resolution) -> bool; silent_changes(asked, resolution) -> tuple[SilentChange, ...];
  SilentChange.line() -> str; with_local_files(server_args, local); resolution_lines(server_args, resolution) -> the
  plan's warnings (ConfigError where SGLang refuses the arguments)
resolver_child.py       the child run with SGLang's interpreter (standard library and SGLang only)
counters.py             SGLang's speculative metrics read into vLLM's units, and its endpoints (`report`)
engine.py               SglangEngine: SGLang as the planner asks it (engines.protocol), registered as "sglang"

Wiring (NIM_ENGINE=sglang, Settings.engine == "sglang"): launch/facts.py builds SglangEngine over installation();
the planner asks it as any engine: read_args (read_native_args of the command line and NIM_PASSTHROUGH_ARGS),
check_spec_layer / check_spec (the vLLM-form config translated), command (translate_config -> merge_native ->
lower_args -> launch_command). `plan` then runs run_resolver where SGLang is installed and adds resolution_lines
to the plan's warnings (launch/engine_check.py); `serve` refuses through serve_python where it is not.
"""
