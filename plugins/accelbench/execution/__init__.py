"""The local executor: one vLLM child process per spec, the same evidence as a pod (modes: core.modes)."""
