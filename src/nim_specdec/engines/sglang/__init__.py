"""SGLang 0.5 at the plan level: the guide's variables and vLLM-form speculative configs written as SGLang's
command, checked by SGLang's own argument resolution. Everything but the two marked shell functions is pure.

The modules, lowest first (each imports only those above it):

options.py              SGLang's server options from the release's snapshot (sglang_options/<release>.json)
  sglang_options(release=RELEASE) -> Mapping[str, Option]; spelling_of(dest) -> str; RELEASE = "0.5.23"
methods.py              the method table: a row per vLLM-form method (eagle3 -> EAGLE3, mtp -> EAGLE, ...)
  METHODS; method_row(method, where) -> SglangMethod (ConfigError for a method SGLang lacks);
  k_flags(row, k) -> ((option, value), ...); same_algorithm(a, b) -> bool (NEXTN is EAGLE)
native_args.py          the user's arguments read as SGLang's parser reads them
  read_native_args(argv, where) -> NativeArgs(speculative, model_path, vllm_config, other)
translation.py          the vLLM-form config as SGLang flags, the user's SGLang flags over them
  translate_config(config: Mapping) -> SpeculativeFlags(fields, notes); SpeculativeFlags.argv() -> tuple[str, ...]
  merge_native(translated: SpeculativeFlags | None, native: NativeArgs) -> SpeculativeFlags
command.py              the command: python -m sglang.launch_server --model-path M --host H --port P ...
  launch_command(python, model_path, host, port, served_model_name, speculative, other) -> tuple[str, ...]
  server_arguments(command) -> tuple[str, ...] (what SGLang's parser reads of it)
installed.py            whether SGLang can be served here, and the refusal where it cannot
  serve_python(python, release) -> str (ConfigError naming NIM_ENGINE); installed_release() -> str | None (shell)
resolution.py           SGLang's own resolution as the check, and the values it would change silently
  run_resolver(python, argvs, timeout=300, device="cpu") -> tuple[Resolution, ...] (shell: runs resolver_child.py);
  check_argv(server_args, device="cpu") -> argv (device None: as given); parse_resolutions(text, count);
  platform_refusal(resolution) -> bool; silent_changes(asked, resolution) -> tuple[SilentChange, ...];
  SilentChange.line() -> str
resolver_child.py       the child run with SGLang's interpreter (standard library and SGLang only)

Wiring (NIM_ENGINE=sglang, Settings.engine == "sglang"): read_native_args(user argv + NIM_PASSTHROUGH_ARGS);
the speculative config (NIM_SPECDEC_ARGS / built-in / the native args' vllm_config), its draft materialized and
rewritten to an absolute path as for vLLM, then translate_config -> merge_native -> launch_command; the plan lists
the notes, and, where SGLang is installed, each silent_changes(...).line() of run_resolver's answer as a warning.
"""
