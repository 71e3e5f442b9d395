"""`xtc-katas cluster certs DIR NODE...`: the certificates of a grading cluster's mutual TLS.

Dask's scheduler, workers and client each show a certificate and accept only a peer
whose certificate the cluster's own CA signed (`dask scheduler --tls-ca-file ...
--tls-cert ... --tls-key ...`, distributed.Security). Made here, with openssl (no
cryptography of our own, and no new Python package: Dask's `Security.temporary()` would
need `cryptography`, which the suite does not install):

    DIR/ca-key.pem    the CA's key: it signs new certificates. It stays with you, never
                      on a node: whoever holds it can make a certificate the cluster trusts
    DIR/ca.pem        the CA's certificate (public)
    DIR/scheduler/    ca.pem, cert.pem, key.pem: for the head node
    DIR/NODE/         the same, for each grading node
    DIR/grader/       the same, for the machine that runs `xtc-katas grade --tls-dir`

Keys are written 0600 in 0700 folders, never with wider rights even for a moment.
Run again with more nodes: what exists is kept, the rest is signed by the same CA.
Dask checks the chain, not the names (a cluster is reached by IP addresses): any
certificate of this CA is a full member, so every key is as private as the grader's.
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: Days a certificate is valid: the CA for years, the others for a teaching year or two.
CA_DAYS, DAYS = 3650, 825
#: The folders that are not nodes.
ROLES = ("scheduler", "grader")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
#: Every member is both a TLS server (it listens) and a client (it connects).
EXTENSIONS = """\
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = DNS:{name}
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
"""
INSTALL = "sudo apt-get install -y openssl"
#: Where the command was started (DIR is read from there): `xtc-katas` works from the
#: suite's root, and imports this module before it moves there.
try:
    LAUNCH_DIR = Path.cwd()
except OSError:  # started in a directory since removed
    LAUNCH_DIR = Path("/")

#: An elliptic-curve key (P-256): what TLS 1.2 and 1.3 peers all take, made in a blink.
KEY = ("-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256")
CA_EXTENSIONS = ("basicConstraints=critical,CA:TRUE", "keyUsage=critical,keyCertSign,cRLSign")


class CertsError(RuntimeError):
    """openssl is missing or failed, or a node's name cannot be a folder."""


def _openssl(*args: str, stdin: bytes = b"") -> bytes:
    if shutil.which("openssl") is None:
        raise CertsError(f"making the cluster's certificates needs openssl: {INSTALL}")
    done = subprocess.run(["openssl", *args], input=stdin, capture_output=True, timeout=60)
    if done.returncode != 0:
        raise CertsError(f"openssl {args[0]} failed: {done.stderr.decode().strip()}")
    return done.stdout


def _write_private(path: Path, data: bytes) -> None:
    """`data` in a new file that only its owner can read, from its first byte."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _new_key(path: Path) -> None:
    _write_private(path, _openssl("genpkey", *KEY))


def _ca(directory: Path) -> None:
    key, cert = directory / "ca-key.pem", directory / "ca.pem"
    if key.exists() and cert.exists():
        return
    if key.exists() or cert.exists():
        raise CertsError(f"{directory} holds one of ca.pem and ca-key.pem, not both: remove it")
    _new_key(key)
    subject = ["-subj", "/CN=xtc-katas grading CA", "-days", str(CA_DAYS)]
    extensions = [arg for ext in CA_EXTENSIONS for arg in ("-addext", ext)]
    cert.write_bytes(_openssl("req", "-x509", "-new", "-key", str(key), *subject, *extensions))


def _member(directory: Path, name: str) -> bool:
    """DIR/name/ with the CA's certificate and a key pair it signed; False if it existed."""
    folder = directory / name
    if (folder / "cert.pem").exists():
        return False
    folder.mkdir(mode=0o700, exist_ok=True)
    for partial in ("key.pem", "ca.pem"):  # a run stopped halfway
        (folder / partial).unlink(missing_ok=True)
    _new_key(folder / "key.pem")
    request = _openssl("req", "-new", "-key", str(folder / "key.pem"), "-subj", f"/CN={name}")
    ca = ["-CA", str(directory / "ca.pem"), "-CAkey", str(directory / "ca-key.pem")]
    serial = ["-set_serial", str(secrets.randbits(63) + 1), "-days", str(DAYS)]
    with tempfile.TemporaryDirectory() as tmp:
        extensions = Path(tmp) / "extensions.cnf"
        extensions.write_text(EXTENSIONS.format(name=name))
        signed = ["-extfile", str(extensions)]
        cert = _openssl("x509", "-req", *ca, *serial, *signed, stdin=request)
    shutil.copyfile(directory / "ca.pem", folder / "ca.pem")
    (folder / "cert.pem").write_bytes(cert)
    return True


def make(directory: Path, nodes: Sequence[str]) -> list[Path]:
    """The CA (if DIR has none) and a signed key pair for the scheduler, each node and the
    grader (those DIR lacks); the folders made."""
    bad = [n for n in nodes if not NAME.fullmatch(n) or n in (*ROLES, "ca")]
    if bad:
        raise CertsError(
            f"not a node's name: {', '.join(map(repr, bad))} (letters, digits, '.', '_', "
            f"'-'; not {', '.join(ROLES)})"
        )
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    _ca(directory)
    return [directory / n for n in dict.fromkeys([*ROLES, *nodes]) if _member(directory, n)]


def add_parser(sub: Any) -> None:
    cluster = sub.add_parser(
        "cluster",
        help="set up a grading cluster (`xtc-katas cluster certs`)",
        description="A grading cluster's set-up: docs/grading.md, 'On a cluster'.",
    )
    actions = cluster.add_subparsers(required=True)
    certs = actions.add_parser(
        "certs",
        help="a CA and a key pair for the scheduler, each node and the grader (mutual TLS)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    certs.add_argument("directory", type=Path, help="where they go (kept private: DIR/ca-key.pem)")
    certs.add_argument("nodes", nargs="+", metavar="NODE", help="each grading node's name")
    certs.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    directory = LAUNCH_DIR / args.directory
    try:
        made = make(directory, args.nodes)
    except CertsError as exc:
        print(f"xtc-katas cluster certs: {exc}", file=sys.stderr)
        return 2
    print("made: " + (", ".join(f"{p}/" for p in made) or "nothing (all there already)"))
    print(
        f"Keep {directory / 'ca-key.pem'} to yourself. Copy each folder to its machine, "
        "readable only by the user that runs Dask there; the commands: docs/grading.md, "
        "'On a cluster'."
    )
    return 0
