"""The regression gate of vLLM CPU versions (not the quality gate of a quantized configuration,
`accelbench.quality.quality_gate`): its rule (`rule`: the matrix's own points, a version against its
neighbours), the regressions among the version deltas (`regressions`), the gate's run over the version
matrix (`gate`) and the owner's answer to what it asked (`answer`). Above reports and planning in the layers:
it plans the matrix's points and writes the report that lists the regressions."""
