"""A self-signed certificate for ``localhost`` and ``127.0.0.1``, made with ``cryptography``
(already installed through PyJWT[crypto]), for the TLS and proxy tests and
the load test through a proxy."""

from __future__ import annotations

import base64
import datetime
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Certificate:
    """PEM files of a certificate and its key, and a client context that trusts it."""

    cert: Path
    key: Path

    def spki_sha256(self) -> str:
        """Base64 SHA-256 of the public key, for Chromium's
        ``--ignore-certificate-errors-spki-list`` (trust this certificate, nothing else)."""
        loaded = x509.load_pem_x509_certificate(self.cert.read_bytes())
        der = loaded.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        digest = hashes.Hash(hashes.SHA256())
        digest.update(der)
        return base64.b64encode(digest.finalize()).decode()

    def client_context(self) -> ssl.SSLContext:
        """A client context trusting this certificate only."""
        return ssl.create_default_context(cafile=str(self.cert))


def self_signed(directory: Path, name: str = "localhost") -> Certificate:
    """Write ``cert.pem``/``key.pem`` to ``directory``: a P-256 certificate for ``name``,
    ``localhost`` and ``127.0.0.1``, valid for a day."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    names = {name, "localhost"}
    alternative: list[x509.GeneralName] = [x509.DNSName(n) for n in sorted(names)]
    alternative.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(alternative), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    key_path.chmod(0o600)
    return Certificate(cert_path, key_path)
