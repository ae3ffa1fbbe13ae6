"""The PostgreSQL tests' fixtures of their own (the cluster's are in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.counting_proxy import CountingProxy, counting_proxy
from tests.support.postgres import Cluster


@pytest.fixture
def counted(pg_cluster: Cluster, pg_url: str) -> Iterator[tuple[CountingProxy, str]]:
    """A counting proxy in front of the cluster, and the store's URL through it."""
    with counting_proxy("127.0.0.1", pg_cluster.port) as proxy:
        yield proxy, pg_url.replace(f":{pg_cluster.port}/", f":{proxy.port}/")
