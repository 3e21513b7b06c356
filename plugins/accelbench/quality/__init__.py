"""The quality feature: how closely a configuration (a quantized checkpoint) follows its reference. The
prompts (`probe_prompts`) and the exact-answer task (`exact_answer_task`) it is measured on, the next-token
divergence (`fidelity`), the accuracy with its intervals (`accuracy`) and the quality gate
(`quality_gate`)."""
