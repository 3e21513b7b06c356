"""The node's weight cache for a runtime without the streamer (issue 49, point 2): where a URI's copy lives
(`runtime.recipes.cached_weights`) and the init container's command line (`loadgen.weights_cache.main`).
The copy itself, against a moto S3 server: tests/integration/test_streamed_weights.py."""

from __future__ import annotations

import pytest
from accelbench.errors import ConfigError
from accelbench.loadgen.weights_cache import main
from accelbench.runtime.recipes import WEIGHTS_CACHE_MOUNT, cached_weights


def test_each_uri_has_a_folder_of_its_own_in_the_nodes_cache() -> None:
    folder = f"{WEIGHTS_CACHE_MOUNT}/lake/models/org/model"
    assert cached_weights("s3://lake/models/org/model") == folder
    assert cached_weights("s3://lake/models/org/model/") == folder
    assert cached_weights("s3://other/models/org/model") != folder  # two buckets never share a copy
    for bad in ("s3://", "s3://lake/models/../../etc"):
        with pytest.raises(ConfigError) as raised:
            cached_weights(bad)
        assert raised.value.field == "weights_uri" and raised.value.value == bad


def test_the_init_containers_command_line_is_checked(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert main(["/local/folder", "/var/lib/accelbench/weights/x"]) == 2  # only object storage is copied
    usage = "usage: python -m accelbench.loadgen.weights_cache s3://bucket/key FOLDER"
    assert usage in capsys.readouterr().err
