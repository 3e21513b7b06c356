"""What every stage shares (specs, execution modes, instance families, load levels, client metrics): the
bottom layer, importing nothing of accelbench but config and errors, so no stage imports another for it."""
