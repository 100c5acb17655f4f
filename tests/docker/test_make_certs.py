"""docker/make-certs.sh, the development certificates of the compose file's SASL_SSL listener,
run on the host as a user would run it (`sh docker/make-certs.sh DIR`)."""

from __future__ import annotations

import ssl
import stat
import subprocess
from pathlib import Path

from cryptography import x509

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "docker" / "make-certs.sh"


def make_certs(target: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", str(SCRIPT), str(target)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_make_certs_creates_a_missing_directory(tmp_path: Path) -> None:
    target = tmp_path / "not" / "there" / "certs"
    done = make_certs(target)
    assert done.returncode == 0, done.stderr
    assert f"wrote {target}/broker.pem and {target}/ca.pem" in done.stdout
    assert sorted(p.name for p in target.iterdir()) == ["broker.pem", "ca.pem"]
    assert stat.S_IMODE((target / "broker.pem").stat().st_mode) == 0o600
    # broker.pem holds the key and the chain: loadable as the broker loads a PEM keystore.
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(target / "broker.pem")
    leaf = x509.load_pem_x509_certificate(
        (target / "broker.pem").read_bytes().split(b"-----END PRIVATE KEY-----")[1]
    )
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(names.get_values_for_type(x509.DNSName)) == {"localhost", "broker"}


def test_make_certs_leaves_existing_certificates_alone(tmp_path: Path) -> None:
    assert make_certs(tmp_path).returncode == 0
    before = (tmp_path / "broker.pem").read_bytes()
    done = make_certs(tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"certificates already in {tmp_path}"
    assert (tmp_path / "broker.pem").read_bytes() == before
