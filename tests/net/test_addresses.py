"""The address rules of the SSRF guard: every non-public range is refused, unless allowed."""

from __future__ import annotations

import ipaddress

import pytest

from app.net.addresses import AddressPolicy, Refusal, check, classify

REFUSED = [
    ("127.0.0.1", Refusal.LOOPBACK),
    ("127.9.9.9", Refusal.LOOPBACK),
    ("10.1.2.3", Refusal.PRIVATE),
    ("172.16.0.1", Refusal.PRIVATE),
    ("172.31.255.254", Refusal.PRIVATE),
    ("192.168.1.1", Refusal.PRIVATE),
    ("100.64.0.1", Refusal.PRIVATE),  # carrier-grade NAT
    ("169.254.169.254", Refusal.LINK_LOCAL),  # cloud metadata
    ("224.0.0.1", Refusal.MULTICAST),
    ("0.0.0.0", Refusal.UNSPECIFIED),
    ("240.0.0.1", Refusal.RESERVED),
    ("255.255.255.255", Refusal.RESERVED),
    ("::1", Refusal.LOOPBACK),
    ("::", Refusal.UNSPECIFIED),
    ("fc00::1", Refusal.PRIVATE),
    ("fd12:3456::1", Refusal.PRIVATE),
    ("fe80::1", Refusal.LINK_LOCAL),
    ("ff02::1", Refusal.MULTICAST),
    ("::ffff:127.0.0.1", Refusal.LOOPBACK),  # IPv4-mapped
    ("::ffff:169.254.169.254", Refusal.LINK_LOCAL),
    ("64:ff9b::a9fe:a9fe", Refusal.LINK_LOCAL),  # NAT64 of 169.254.169.254
    ("2002:7f00:1::", Refusal.LOOPBACK),  # 6to4 of 127.0.0.1
]


@pytest.mark.parametrize(("text", "why"), REFUSED)
def test_non_public_addresses_are_refused_with_their_reason(text: str, why: Refusal) -> None:
    address = ipaddress.ip_address(text)
    assert classify(address) is why
    assert check(address, AddressPolicy()) is why


@pytest.mark.parametrize("text", ["8.8.8.8", "93.184.215.14", "2606:4700:4700::1111", "::ffff:8.8.8.8"])
def test_public_addresses_pass(text: str) -> None:
    assert check(ipaddress.ip_address(text), AddressPolicy()) is None


def test_the_operator_can_allow_everything_or_some_networks() -> None:
    metadata = ipaddress.ip_address("169.254.169.254")
    assert check(metadata, AddressPolicy(allow_private=True)) is None
    some = AddressPolicy.of(False, ["127.0.0.1/32", "fd00::/8"])
    assert check(ipaddress.ip_address("127.0.0.1"), some) is None
    assert check(ipaddress.ip_address("::ffff:127.0.0.1"), some) is None  # the same host, mapped
    assert check(ipaddress.ip_address("fd00::5"), some) is None
    assert check(ipaddress.ip_address("127.0.0.2"), some) is Refusal.LOOPBACK
    assert check(metadata, some) is Refusal.LINK_LOCAL
