"""What every stage shares (specs, execution modes and the executor protocol, instance families, load levels,
client metrics, the evidence contract): the bottom layer, importing nothing of accelbench but config and
errors, so no stage imports another for it."""
