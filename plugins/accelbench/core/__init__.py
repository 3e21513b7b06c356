"""What every stage shares (specs, execution modes and the executor protocol, instance families, load levels,
client metrics, the evidence contract, one Price, the SLOs and the load search that finds a capacity under
them): the bottom layer, importing nothing of accelbench but config and errors, so no stage imports another
for it."""
