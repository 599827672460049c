"""The counter-based random stream every rule procedure draws from (the twin of ``Rng.swift``).

``jax.random`` (threefry) costs about 1 µs per env for a few dozen numbers under ``vmap`` on
CPU, far more than the rules themselves. Bulk draws therefore come from ``hash_uniform``: a
counter-based stream (the murmur3 finaliser of ``(s0 + i·φ) xor s1``) whose two seed words are
mixed from the call's key data (``rng_seed``, specs/env-shell.md §1). Stage generation,
placement, programs and the enemy phase each take one key and read positions of this stream.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

_GOLDEN = np.uint32(0x9E3779B9)


def _fmix32(x: jax.Array) -> jax.Array:
    """murmur3's 32-bit finaliser: a bijection of uint32 with full avalanche."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x85EBCA6B)
    x = x ^ (x >> 13)
    x = x * jnp.uint32(0xC2B2AE35)
    return x ^ (x >> 16)


def rng_seed(key: jax.Array) -> jax.Array:
    """uint32[2]: seed words for ``hash_bits`` / ``hash_uniform``, mixed from ``key``'s data.

    The key's raw words (``jax.random.key_data``: 2 for threefry keys, legacy
    ``PRNGKey`` arrays included, 4 for rbg keys) are already the output of the
    split that made the key, so a few ``fmix32`` rounds turn them into two
    well-mixed seed words without a threefry draw; the mixing also spreads
    structured user keys (``jax.random.key(0)`` has the data ``[0, 0]``,
    ``key(1)`` ``[0, 1]``). Under ``vmap`` on CPU a ``jax.random`` call is a
    rolled threefry loop (5 trips of ≈ 16 small kernels), so every procedure
    seeded here (stage generation, placement, programs, the enemy phase) is
    cheaper for it (specs/env-shell.md §1, §7.9). Same key → same seed.
    """
    data = jax.random.key_data(key).reshape(-1).astype(jnp.uint32)
    a = _fmix32(data[0] ^ jnp.uint32(0x3C6EF372))
    b = _fmix32(data[1] + jnp.uint32(_GOLDEN))
    for w in range(2, data.shape[0]):
        b = _fmix32(b ^ data[w])
    return jnp.stack([_fmix32(a ^ (b * jnp.uint32(0x27D4EB2F))), _fmix32(b ^ a)])


def hash_bits(seed: jax.Array, counter: jax.Array) -> jax.Array:
    """uint32[...]: the counter-based stream at positions ``counter`` (uint32/int32[...]).

    murmur3 ``fmix32`` of ``(seed[0] + counter·φ) xor seed[1]``; distinct
    counters give (pseudo-)independent words, and the seed comes from a JAX key.
    """
    x = seed[0] + jnp.asarray(counter).astype(jnp.uint32) * jnp.uint32(_GOLDEN)
    return _fmix32(x ^ seed[1])


def hash_uniform(seed: jax.Array, counter: jax.Array) -> jax.Array:
    """float32[...] uniform in [0, 1) with 24 random bits, from ``hash_bits``."""
    return (hash_bits(seed, counter) >> 8).astype(jnp.float32) * jnp.float32(2.0**-24)
