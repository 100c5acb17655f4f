"""Fixtures for every test folder."""

from __future__ import annotations

import pytest

from tests.support.certs import Pki, make_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """A CA, a broker keystore and client certificates (PEM files), made once per module."""
    return make_pki(tmp_path_factory.mktemp("pki"))
