"""Which addresses a user-supplied URL may reach.

A server that fetches URLs for its users must not become their way into its own network: the
cloud metadata service (169.254.169.254), the admin port on localhost, the database on 10.0.0.5.
:func:`check` refuses every address outside the public internet — loopback, private, link-local,
carrier-grade NAT, multicast, unspecified, reserved, documentation and benchmark ranges, and their
IPv6 equivalents (IPv4-mapped and NAT64/6to4 forms are judged by the IPv4 address they carry) —
unless the operator's :class:`AddressPolicy` allows it, wholesale or by CIDR.

The check is only half of the guard: the fetcher connects to the very address it checked, so a
name that resolves differently a second time (DNS rebinding) gains nothing.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass, field
from enum import StrEnum

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class Refusal(StrEnum):
    """Why a URL or an address is refused."""

    SCHEME = "scheme"  # not http or https
    MALFORMED = "malformed"  # no host, credentials in the URL, a bad port
    UNRESOLVABLE = "unresolvable"  # the name has no address
    LOOPBACK = "loopback"
    PRIVATE = "private"  # 10/8, 172.16/12, 192.168/16, fc00::/7, CGNAT 100.64/10
    LINK_LOCAL = "link_local"  # 169.254/16 (cloud metadata), fe80::/10
    MULTICAST = "multicast"
    UNSPECIFIED = "unspecified"  # 0.0.0.0, ::
    RESERVED = "reserved"  # 240/4, documentation, benchmarking, 0/8, broadcast...


_CGNAT = ipaddress.ip_network("100.64.0.0/10")
# ip_address.is_global is False for these too, but they deserve their own word.
_NAMED: tuple[tuple[str, Refusal], ...] = (
    ("is_unspecified", Refusal.UNSPECIFIED),
    ("is_loopback", Refusal.LOOPBACK),
    ("is_link_local", Refusal.LINK_LOCAL),
    ("is_multicast", Refusal.MULTICAST),
    ("is_reserved", Refusal.RESERVED),  # before is_private, which includes 240/4 and the broadcast address
    ("is_private", Refusal.PRIVATE),
)


@dataclass(frozen=True)
class AddressPolicy:
    """What the operator allows beyond the public internet. ``allow_private`` lets every address
    through (a server on a trusted LAN); ``allowed`` lets these networks through."""

    allow_private: bool = False
    allowed: tuple[IPNetwork, ...] = field(default_factory=tuple)

    @classmethod
    def of(cls, allow_private: bool, cidrs: list[str]) -> AddressPolicy:
        return cls(allow_private, tuple(ipaddress.ip_network(c, strict=False) for c in cidrs))


def embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one stands for (::ffff:a.b.c.d, 64:ff9b::/96, 6to4, Teredo), if any:
    reaching it reaches that IPv4 host."""
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in ipaddress.ip_network("64:ff9b::/96"):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    return None


def classify(address: IPAddress) -> Refusal | None:
    """Why ``address`` is not on the public internet, or None when it is."""
    inner = embedded_ipv4(address)
    if inner is not None:
        return classify(inner)
    if address in _CGNAT:
        return Refusal.PRIVATE
    for attribute, refusal in _NAMED:
        if getattr(address, attribute):
            return refusal
    if not address.is_global:
        return Refusal.RESERVED
    return None


def check(address: IPAddress, policy: AddressPolicy) -> Refusal | None:
    """Why ``policy`` refuses ``address``, or None when it may be reached."""
    refusal = classify(address)
    if refusal is None or policy.allow_private:
        return None
    candidates = [address] + ([inner] if (inner := embedded_ipv4(address)) is not None else [])
    if any(a in net for a in candidates for net in policy.allowed if a.version == net.version):
        return None
    return refusal


async def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address ``host`` resolves to (a literal address is itself), in the resolver's order.
    Raises :class:`OSError` when it resolves to none. A name is looked up in asyncio's own executor
    (a few threads, not the pool the database work shares); a lookup the caller stops waiting for
    ends within the system resolver's own timeout."""
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: list[IPAddress] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in seen:
            seen.append(address)
    return seen
