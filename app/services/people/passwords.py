"""Passwords, hashed with argon2id (RFC 9106) by argon2-cffi at its library defaults.

A failed check costs the same whether the account exists or not: an unknown email is checked
against a hash made once at import, so the time of a sign-in does not tell which emails exist.
"""

from __future__ import annotations

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from app.errors import ValidationError

MIN_LENGTH = 10
MAX_LENGTH = 1024  # argon2 takes any length; a longer "password" is a denial-of-service attempt

_hasher = PasswordHasher()
_NOBODY = _hasher.hash("a password no account has, checked when the account does not exist")


def check_new(password: str, *, field: str = "password") -> None:
    """A new password's rules: long enough to resist guessing, short enough to hash cheaply."""
    if len(password) < MIN_LENGTH:
        raise ValidationError(field, f"at least {MIN_LENGTH} characters")
    if len(password) > MAX_LENGTH:
        raise ValidationError(field, f"at most {MAX_LENGTH} characters")


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify(stored: str | None, password: str) -> bool:
    """Whether ``password`` matches ``stored`` (None: no password, checked against a dummy)."""
    try:
        return _hasher.verify(stored or _NOBODY, password[:MAX_LENGTH]) and stored is not None
    except (VerificationError, InvalidHashError):
        return False


def needs_rehash(stored: str) -> bool:
    """Whether ``stored`` was made with other parameters than today's (rehashed at sign-in)."""
    return _hasher.check_needs_rehash(stored)
