"""Reading a node's ledger from Python: a ledger written here from the format the module docs
of `dpwalk_privacy::ledger` document (format 3), read back as the CLI reads it."""

import json
import math
import struct
import subprocess
import zlib

import pytest

import dpwalk
from test_accountant import gdp_delta


def ledger_bytes(orders, contributions, noise_only=()):
    """Format 3: a header, then each visit in seq order. `contributions` maps a seq to the
    noise multiplier z of one Gaussian mechanism (RDP α/(2z²), μ² = 1/z²)."""
    header = b"DPWLEDG3" + bytes(range(32)) + struct.pack("<QI", 7, len(orders))
    header += struct.pack(f"<{len(orders)}d", *orders)
    out = header + struct.pack("<I", zlib.crc32(header))
    visits = [(s, z) for s, z in contributions.items()] + [(s, None) for s in noise_only]
    for seq, z in sorted(visits):
        if z is None:
            payload = struct.pack("<Q", seq)
        else:
            values = [a / (2 * z * z) for a in orders]
            payload = struct.pack(f"<Qd{len(orders)}d", seq, 1 / (z * z), *values)
        length = struct.pack("<I", len(payload))
        out += length + payload + struct.pack("<I", zlib.crc32(length + payload))
    return out


ORDERS = [1.5, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]


@pytest.fixture
def ledger(tmp_path):
    path = tmp_path / "ledger.bin"
    path.write_bytes(ledger_bytes(ORDERS, {3: 2.0, 10: 2.0, 12: 4.0}, noise_only=[15]))
    return path


def test_a_ledger_reads_as_the_cli_reads_it(ledger, dpwalk_bin):
    ours = dpwalk.ledger_show(ledger, delta=1e-5, records=True)
    out = subprocess.run(
        [str(dpwalk_bin), "ledger", "show", str(ledger), "--delta", "1e-5", "--records", "--json"],
        check=True,
        capture_output=True,
        text=True,
    )
    assert ours == json.loads(out.stdout)


def test_a_ledger_of_gaussian_contributions_is_converted_exactly(ledger):
    doc = dpwalk.ledger_show(ledger, delta=1e-5)
    assert (doc["records"], doc["noise_only"]) == (3, 1)
    assert (doc["first_seq"], doc["last_seq"], doc["last_visit_seq"]) == (3, 12, 15)
    assert (doc["orders"], doc["min_order"], doc["max_order"]) == (7, 1.5, 64.0)
    assert "seqs" not in doc
    mu = math.sqrt(1 / 4 + 1 / 4 + 1 / 16)
    assert doc["exact_gaussian_mu"] == pytest.approx(mu, rel=1e-12)
    assert gdp_delta(mu, doc["epsilon"]) <= 1e-5 * (1 + 1e-9)
    assert gdp_delta(mu, doc["epsilon"] * (1 - 1e-6)) > 1e-5
    assert dpwalk.ledger_show(ledger, records=True)["seqs"] == [3, 10, 12]


def test_a_torn_ledger_says_what_to_do(ledger):
    ledger.write_bytes(ledger.read_bytes()[:-3])
    with pytest.raises(ValueError) as info:
        dpwalk.ledger_show(ledger)
    assert "torn last record" in str(info.value)
    assert "start its node again" in str(info.value)


def test_a_damaged_record_is_refused(ledger):
    data = bytearray(ledger.read_bytes())
    data[120] ^= 1  # inside the first contribution
    ledger.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="checksum"):
        dpwalk.ledger_show(ledger)


def test_a_header_with_bad_orders_is_a_damaged_ledger_not_a_bad_delta(tmp_path):
    path = tmp_path / "ledger.bin"
    path.write_bytes(ledger_bytes([2.0, 1.5], {}))
    with pytest.raises(ValueError) as info:
        dpwalk.ledger_show(path)
    assert "ledger header" in str(info.value) and "is it a dpwalk ledger" in str(info.value)


def test_a_missing_file_is_an_os_error_and_a_bad_delta_a_value_error(tmp_path, ledger):
    with pytest.raises(FileNotFoundError, match="check the path"):
        dpwalk.ledger_show(tmp_path / "none.bin")
    with pytest.raises(ValueError, match="delta must be in"):
        dpwalk.ledger_show(ledger, delta=1.0)
