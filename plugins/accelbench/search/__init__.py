"""The adaptive load search: its statistics (`statistics`) and its state machine (`load_search`). The plan
and the results it fills are in `accelbench.core.search_plan`: the spec and the evidence carry them."""
