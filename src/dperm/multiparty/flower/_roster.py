"""The party roster: each party signs its SecAgg+ public keys with its party key; every party checks every peer's.

SecAgg+ (Bonawitz et al., CCS 2017, Sec. 4 and Fig. 4, "Round 1") assumes
that the public keys the server relays are the users' own: against an
active server the paper's malicious-model variant has each user sign its
two public keys with a long-term signing key, and every user checks the
signatures against the users' verification keys from a trusted set-up
(the PKI). Flower's SecAgg+ relays unsigned keys, so a coordinator can put
its own keys in place of a peer's (it then decrypts the key shares meant
for that peer and knows the pairwise mask) or add nodes of its own (sybils)
until it holds every peer of a party. dperm's parties already hold a
long-term key, the ECDSA key their SuperNode authenticates with
(:func:`~dperm.multiparty.flower.deploy.write_party_key`); the roster is
the parties' public keys, agreed among the parties out of band (the same
``.pub`` lines the coordinator authorises).

What a party signs, at the set-up stage: ``DOMAIN || run id || pk1 || pk2``
(lengths prefixed), with ECDSA and SHA-384. What it checks, at the
share-keys stage, before Flower's mod encrypts a single share: exactly one
relayed key pair per roster key (so ``K`` = the roster's size), each signed
by its roster key for this run, its own signed by itself. A key pair the
coordinator made, a party not on the roster, and a roster party shown twice
are refused. Replaying a party's signed keys from an earlier round of the
same run gives the coordinator nothing (it lacks their private keys): the
masks do not cancel and the round fails.
"""

from __future__ import annotations

from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

#: The set-up reply's entry with ``[party public key, signature]``; relayed at
#: the share-keys stage as ``f"{SIGNATURE_KEY}:{node id}"`` next to the node's keys.
SIGNATURE_KEY = "dperm-key-signature"
DOMAIN = b"dperm/secagg+/public-keys/v1"
#: A party's node config entries: its private key file and the roster file.
PARTY_KEY, PARTY_ROSTER = "party-key", "party-roster"
_ECDSA = ec.ECDSA(hashes.SHA384())


def _openssh(public_key) -> bytes:
    return public_key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)


def load_roster(path) -> frozenset:
    """The roster's party public keys (OpenSSH lines, ``#`` comments and blank lines skipped).

    Raises ValueError naming the file and line of a key that is not an
    elliptic-curve public key, or of a key listed twice.
    """
    keys = set()
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            key = serialization.load_ssh_public_key(line.encode("ascii"))
        except (ValueError, UnicodeEncodeError) as error:
            raise ValueError(f"party roster {str(path)!r} line {number}: not an OpenSSH public key "
                             f"({error}).") from None
        if not isinstance(key, ec.EllipticCurvePublicKey):
            raise ValueError(f"party roster {str(path)!r} line {number}: an ECDSA key is needed "
                             "(dperm party keygen writes one).")
        if _openssh(key) in keys:
            raise ValueError(f"party roster {str(path)!r} line {number}: this key is listed twice.")
        keys.add(_openssh(key))
    if len(keys) < 2:
        raise ValueError(f"party roster {str(path)!r} lists {len(keys)} key(s); a secure sum needs at least 2.")
    return frozenset(keys)


def load_party_key(path):
    """The party's ECDSA private key (OpenSSH PEM, as ``dperm party keygen`` writes it)."""
    key = serialization.load_ssh_private_key(Path(path).read_bytes(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError(f"party key {str(path)!r} is not an ECDSA key (dperm party keygen writes one).")
    return key


def signed_payload(run_id: int, pk1: bytes, pk2: bytes) -> bytes:
    """What a party signs: the domain, the run id and both SecAgg+ public keys, each length-prefixed."""
    parts = [DOMAIN, (int(run_id) % 2**64).to_bytes(8, "little")]
    for key in (pk1, pk2):
        parts += [len(key).to_bytes(4, "little"), bytes(key)]
    return b"".join(parts)


def party_public_key(private_key) -> bytes:
    """The party's public key as a roster line holds it (OpenSSH, no comment)."""
    return _openssh(private_key.public_key())


def sign_public_keys(private_key, run_id: int, pk1: bytes, pk2: bytes) -> list[bytes]:
    """``[party public key (OpenSSH), ECDSA-SHA384 signature]`` of this party's SecAgg+ keys."""
    return [_openssh(private_key.public_key()), private_key.sign(signed_payload(run_id, pk1, pk2), _ECDSA)]


def check_relayed_keys(roster, own_public: bytes, own_nid: int, run_id: int, keys: dict, signatures: dict) -> None:
    """Raise ValueError (one line) unless ``keys`` holds one pair per roster key, each signed by it.

    Parameters
    ----------
    roster : frozenset of bytes
        The parties' public keys (:func:`load_roster`).
    own_public : bytes
        This party's public key (OpenSSH).
    own_nid : int
    run_id : int
    keys : dict of node id -> (pk1, pk2)
        The SecAgg+ public keys the coordinator relayed.
    signatures : dict of node id -> [party public key, signature]
        The signatures it relayed with them.
    """
    if len(keys) != len(roster):
        raise ValueError(f"it was given the keys of {len(keys)} participants; the roster lists {len(roster)} parties.")
    signers = {}
    for nid, (pk1, pk2) in sorted(keys.items()):
        entry = signatures.get(nid)
        if not (isinstance(entry, list) and len(entry) == 2 and all(isinstance(x, bytes) for x in entry)):
            raise ValueError(f"the SecAgg+ keys of node {nid} come without a party signature.")
        party, signature = entry
        if party not in roster:
            raise ValueError(f"the SecAgg+ keys of node {nid} are signed by a key that is not on the roster.")
        try:
            serialization.load_ssh_public_key(party).verify(signature, signed_payload(run_id, pk1, pk2), _ECDSA)
        except InvalidSignature:
            raise ValueError(f"the SecAgg+ keys of node {nid} do not match its party's signature for this "
                             "run (substituted keys).") from None
        if party in signers.values():
            raise ValueError(f"nodes {sorted(n for n, p in signers.items() if p == party) + [nid]} carry keys "
                             "signed by the same party.")
        signers[nid] = party
    if signers.get(own_nid) != own_public:
        raise ValueError("its own SecAgg+ keys are not relayed under its own party key.")
