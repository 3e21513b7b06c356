"""The regression gate of vLLM CPU versions (not the quality gate of a quantized configuration,
`accelbench.report.quality`): the gate's run over the version matrix (`gate`) and the owner's answer to what
it asked (`answer`). Above reports and planning in the layers: it plans the matrix's points and writes the
report that lists the regressions; the statistics are `accelbench.report.gate`'s."""
