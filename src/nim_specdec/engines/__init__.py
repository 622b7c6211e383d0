"""The engines the launcher can serve with, each behind one package: what the planner needs from an engine is
the protocol (engines/protocol.py); an engine's package holds everything that knows that engine. plan/ never
imports an engine's package, and no engine imports another (tests/contract/test_import_contract.py)."""
