"""The settings: the variable table, and the environment read, parsed and checked into typed values. No I/O."""
