"""What every stage shares (specs, execution modes and the executor protocol, instance families, load levels,
client metrics, the evidence contract, one Price, the SLOs and their intervals, the load search's plan and
results): the bottom layer, importing nothing of accelbench but config and errors, so no stage imports another
for it. A feature's package (`accelbench.search`, `accelbench.quality`, `accelbench.traces`,
`accelbench.decisions`) imports core, never the other way (a lint-imports contract)."""
