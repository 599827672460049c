"""The critic's value as a histogram over returns, fitted by cross-entropy (HL-Gauss).

HackMatrix's returns are far from Gaussian: most games end in a few tens of points, a win pays
500 + 100 x score at once, a late death -63.5 (interface §4). A scalar critic fitted by squared
error follows the rare large returns with large gradients, and PPO's value clip (0.2 in return
units a step) lets it follow them only slowly. The histogram head (``--network grid-hl``)
predicts logits over ``bins`` evenly spaced returns; the value every consumer reads (GAE, the
search's leaves) is the histogram's mean, in the same units as the scalar's. Its loss is the
cross-entropy against the target's histogram: the mass of Normal(target, sigma) over each
bin's interval, sigma = 0.75 bin widths, the target clipped into the support (Farebrother et
al. 2024, "Stop Regressing", HL-Gauss). The gradient in the logits is ``p - target``, bounded
whatever the return's size.

A scalar head lifts into a histogram head exactly (``lift_scalar_head``): logits ``b_i u /
sigma^2 - b_i^2 / (2 sigma^2)`` for the scalar's output ``u`` are a Normal(u, sigma) discretised
on the bins, whose mean is ``u`` to within 1e-4 of a bin width while it lies inside the support.
So a ``grid`` checkpoint warm-starts a ``grid-hl`` run as the same function, and a fresh
``grid-hl`` head is a fresh scalar head lifted.

In the hour's recipe the histogram's value fits the policy's returns better than the scalar's,
and the network's search (its prior and this value) wins less (specs/train.md §11): the recipe
keeps the scalar head.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np


@dataclasses.dataclass(frozen=True)
class ValueHistogram:
    """Evenly spaced return centres ``low .. high`` (``bins`` of them) and the target's width
    in bin widths."""

    low: float
    high: float
    bins: int
    sigma_ratio: float = 0.75

    def __post_init__(self):
        if not (self.bins >= 2 and self.high > self.low and self.sigma_ratio > 0):
            raise ValueError(f"a value histogram needs bins >= 2, high > low and sigma > 0: {self}")

    @property
    def width(self) -> float:
        return (self.high - self.low) / (self.bins - 1)

    @property
    def sigma(self) -> float:
        return self.sigma_ratio * self.width

    def centers(self) -> np.ndarray:
        """f32[bins]: the returns the bins stand for."""
        return np.linspace(self.low, self.high, self.bins, dtype=np.float32)


# HackMatrix's returns in the canonical reward's units (with the trainer's program bonus): a
# death costs at most -63.5 and a few hit points; a win 500 + 100 x score + the stage rewards.
# Bins of 10 points: a Normal target of sigma 7.5 spans the 1-50 point differences between
# positions, and 221 logits cost the 256-wide head about 14 % of the network's multiply-adds.
RETURN_HISTOGRAM = ValueHistogram(low=-200.0, high=2000.0, bins=221)


def histogram_mean(hist: ValueHistogram, logits: jax.Array) -> jax.Array:
    """f32[...]: the value, the mean return of the histogram of ``logits`` f32[..., bins]."""
    return jax.nn.softmax(logits, axis=-1) @ jnp.asarray(hist.centers())


def histogram_target(hist: ValueHistogram, value: jax.Array) -> jax.Array:
    """f32[..., bins]: the mass of Normal(value, sigma) over each bin's interval, ``value``
    clipped into the support and the mass renormalised to the support's span."""
    centers = jnp.asarray(hist.centers())
    edges = jnp.concatenate([centers - hist.width / 2, centers[-1:] + hist.width / 2])
    y = jnp.clip(value, hist.low, hist.high)[..., None]
    cdf = jax.scipy.special.ndtr((edges - y) / hist.sigma)
    mass = cdf[..., 1:] - cdf[..., :-1]
    return mass / (cdf[..., -1:] - cdf[..., :1])


def histogram_loss(hist: ValueHistogram, logits: jax.Array, targets: jax.Array) -> jax.Array:
    """The mean over samples of the cross-entropy of ``logits`` against ``histogram_target``
    of ``targets`` (the returns GAE gives); the target gets no gradient."""
    target = jax.lax.stop_gradient(histogram_target(hist, targets))
    return -(target * jax.nn.log_softmax(logits, axis=-1)).sum(-1).mean()


def lift_scalar_head(hist: ValueHistogram, kernel, bias) -> tuple[jax.Array, jax.Array]:
    """``(kernel f32[H, bins], bias f32[bins])`` of the histogram head whose distribution is
    Normal(u, sigma) on the bins for a scalar head's ``u = h @ kernel + bias`` (``kernel``
    [H, 1], ``bias`` [1]): the same value, to within 1e-4 of a bin width inside the support."""
    if jnp.ndim(kernel) != 2 or jnp.shape(kernel)[1] != 1 or jnp.shape(bias) != (1,):
        raise ValueError(f"a scalar value head is kernel [H, 1] and bias [1], got "
                         f"{jnp.shape(kernel)} and {jnp.shape(bias)}")  # fmt: skip
    b = hist.centers().astype(np.float64)
    slope = (b / hist.sigma**2).astype(np.float32)
    offset = (-(b**2) / (2 * hist.sigma**2)).astype(np.float32)
    kernel = jnp.asarray(kernel, jnp.float32)
    return kernel * slope[None, :], jnp.asarray(bias, jnp.float32) * slope + offset
