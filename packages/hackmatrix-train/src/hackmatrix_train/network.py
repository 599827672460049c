"""Actor-critic networks (flax) and the masked categorical policy (distrax).

Every network maps an observation NamedTuple with an ``action_mask`` field (bool[..., A]) to
``(logits f32[..., A], value f32[...])``. The logits are *unmasked*; ``masked_categorical``
applies the mask, so the mask stored with each transition is re-applied in the loss.

* ``MLP``: the earlier trainer's network. All non-mask fields are flattened and concatenated in
  field order (for HackMatrix: player, programs, grid in C order = ``flatten_observation``), then
  separate actor and critic torsos of ``num_layers`` x ``hidden_dim`` ReLU layers.
* ``GridEncoder``: respects the 6x6 board. A per-cell embedding of the 42 channels plus a
  player-position plane, one 3x3 convolution, then a trunk joined with the player and program
  vectors and separate actor/critic layers. Requires ``grid`` f32[..., 6, 6, C]. With
  ``res_blocks`` (``--res-blocks``) residual 3x3 blocks after the convolution; ``grow_blocks``
  adds blocks to a network's params with its function kept (a warm start from fewer blocks).
* ``TwinGrid`` (``grid-twin``): two ``GridEncoder`` towers, the actor's logits from one and the
  critic's value from the other, so the value's gradient no longer reaches the policy's cell
  embedding, convolution and trunk (in ``GridEncoder`` it is about 4x the policy's there,
  specs/train.md §10). ``twin_params`` grows it from a ``GridEncoder``'s params exactly.
* ``grid-hl``: ``GridEncoder`` whose critic ends in a histogram over returns fitted by
  cross-entropy (``value_head.py``, HL-Gauss); its value is the histogram's mean.
  ``hl_params`` lifts a ``GridEncoder``'s scalar head into it exactly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from hackmatrix_train.value_head import (
    RETURN_HISTOGRAM,
    ValueHistogram,
    histogram_mean,
    lift_scalar_head,
)

if TYPE_CHECKING:
    import distrax


def masked_categorical(logits: jax.Array, mask: jax.Array) -> distrax.Categorical:
    """Categorical over valid actions only; invalid logits become the dtype's minimum.

    ``finfo.min`` (never -inf) keeps every log-prob finite; distrax's entropy multiplies by
    ``exp(log_p)``, which is exactly 0 for masked actions. An all-False mask leaves every logit
    at ``finfo.min``, i.e. a uniform distribution with finite log-probs. distrax is imported
    here, at the first trace, not with the module: it loads TensorFlow Probability (seconds of a
    cold start), which a greedy evaluation or a search never needs.
    """
    import distrax

    return distrax.Categorical(logits=masked_logits(logits, mask))


def masked_logits(logits: jax.Array, mask: jax.Array) -> jax.Array:
    """The logits with each invalid action's at the dtype's minimum (``masked_categorical``)."""
    return jnp.where(mask, logits, jnp.finfo(logits.dtype).min)


def greedy_action(logits: jax.Array, mask: jax.Array) -> jax.Array:
    """int32[...]: the argmax of ``masked_categorical(logits, mask).logits``, the same
    operations (distrax's normalised logits are ``log_softmax``), without loading distrax."""
    return jnp.argmax(jax.nn.log_softmax(masked_logits(logits, mask), axis=-1), axis=-1).astype(
        jnp.int32
    )


def flat_features(obs) -> jax.Array:
    """All non-mask observation fields, flattened per sample and concatenated in field order."""
    batch = obs.action_mask.shape[:-1]
    parts = [
        jnp.reshape(getattr(obs, name), (*batch, -1)).astype(jnp.float32)
        for name in obs._fields
        if name != "action_mask"
    ]
    return jnp.concatenate(parts, axis=-1)


def _dense(features: int, scale: float) -> nn.Dense:
    return nn.Dense(features, kernel_init=nn.initializers.orthogonal(scale))


class MLP(nn.Module):
    """Separate actor and critic MLPs over the flattened observation."""

    num_actions: int
    hidden_dim: int = 256
    num_layers: int = 2

    @nn.compact
    def __call__(self, obs):
        x = flat_features(obs)
        a, c = x, x
        for _ in range(self.num_layers):
            a = nn.relu(_dense(self.hidden_dim, np.sqrt(2))(a))
            c = nn.relu(_dense(self.hidden_dim, np.sqrt(2))(c))
        logits = _dense(self.num_actions, 0.01)(a)
        value = _dense(1, 1.0)(c)[..., 0]
        return logits, value


def neighbourhood_3x3(x: jax.Array) -> jax.Array:
    """f32[B, 6, 6, C] -> f32[B, 6, 6, 9C]: each cell's 3x3 neighbourhood (zero padded).

    A 3x3 convolution written as one dense layer over this (im2col): XLA:CPU runs dots far
    faster than convolution backprops.
    """
    padded = jnp.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    shifts = [padded[:, dr : dr + 6, dc : dc + 6, :] for dr in range(3) for dc in range(3)]
    return jnp.concatenate(shifts, axis=-1)


def cells_with_player(obs) -> tuple[jax.Array, tuple[int, ...], jax.Array]:
    """``(cells, batch, player)``: the grid's channels with a player-position plane added,
    f32[-1, 6, 6, C + 1] (the batch flattened), the batch shape, and the player vector as f32."""
    grid = obs.grid.astype(jnp.float32)
    if grid.ndim < 3 or grid.shape[-3:-1] != (6, 6):
        raise ValueError(f"GridEncoder needs grid f32[..., 6, 6, C], got {grid.shape}")
    batch = grid.shape[:-3]
    player = obs.player.astype(jnp.float32)
    # player-position plane: player[0:2] = (row/5, col/5) (interface §3.2)
    rc = jnp.clip(jnp.round(player[..., :2] * 5.0), 0, 5).astype(jnp.int32)
    here = (jnp.arange(6)[:, None] == rc[..., 0, None, None]) & (
        jnp.arange(6)[None, :] == rc[..., 1, None, None]
    )
    grid = jnp.concatenate([grid, here[..., None].astype(jnp.float32)], axis=-1)
    return grid.reshape((-1, 6, 6, grid.shape[-1])), batch, player


class GridEncoder(nn.Module):
    """Cell embedding + 3x3 neighbourhood layer over the 6x6 grid, trunk, actor/critic heads.

    Per cell: the 42 channels plus a player-position plane -> ``cell_dim`` (shared weights
    across cells), then a 3x3 convolution (as a dense layer over each cell's neighbourhood).
    The 36 cell vectors are flattened (position-aware) and joined with the player and program
    vectors into one ``hidden_dim`` trunk layer; actor and critic each add ``num_layers - 1``
    hidden layers. About 2.3x fewer multiply-adds per sample than ``MLP`` at 256 x 2.

    ``res_blocks`` residual blocks follow the convolution, each a 3x3 layer, a ReLU and a 1x1
    layer whose kernel starts at zero, added to the cells: per-cell capacity that starts as
    the identity, so ``grow_blocks`` can add blocks to a trained network exactly. Each block
    costs about 0.46x the network's gradient time on the CPU and few parameters (2,592).
    """

    num_actions: int
    hidden_dim: int = 256
    num_layers: int = 2
    cell_dim: int = 16
    value_histogram: ValueHistogram | None = None  # None: a scalar value head
    res_blocks: int = 0

    @nn.compact
    def __call__(self, obs, value_logits: bool = False):
        """``(logits, value)``; with ``value_logits`` (a histogram head only) also the
        histogram's logits f32[..., bins], which its loss reads."""
        x, batch, player = cells_with_player(obs)
        x = nn.relu(_dense(self.cell_dim, np.sqrt(2))(x))
        x = nn.relu(_dense(self.cell_dim, np.sqrt(2))(neighbourhood_3x3(x)))
        for _ in range(self.res_blocks):
            h = nn.relu(_dense(self.cell_dim, np.sqrt(2))(neighbourhood_3x3(x)))
            x = x + nn.Dense(self.cell_dim, kernel_init=nn.initializers.zeros)(h)
        x = x.reshape((*batch, 36 * self.cell_dim))
        vec = jnp.concatenate([player, obs.programs.astype(jnp.float32)], axis=-1)
        h = nn.relu(_dense(self.hidden_dim, np.sqrt(2))(jnp.concatenate([x, vec], axis=-1)))
        a, c = h, h
        for _ in range(self.num_layers - 1):
            a = nn.relu(_dense(self.hidden_dim, np.sqrt(2))(a))
            c = nn.relu(_dense(self.hidden_dim, np.sqrt(2))(c))
        logits = _dense(self.num_actions, 0.01)(a)
        if self.value_histogram is None:
            if value_logits:
                raise ValueError("a scalar value head has no value logits")
            return logits, _dense(1, 1.0)(c)[..., 0]
        v_logits = histogram_head(self.value_histogram)(c)
        value = histogram_mean(self.value_histogram, v_logits)
        return (logits, value, v_logits) if value_logits else (logits, value)


def histogram_head(hist: ValueHistogram) -> nn.Dense:
    """The histogram value head, initialised as a fresh scalar head (``_dense(1, 1.0)``)
    lifted onto the bins (``lift_scalar_head``): a Normal around the scalar's value."""

    def kernel_init(key, shape, dtype=jnp.float32):
        scalar = nn.initializers.orthogonal(1.0)(key, (shape[0], 1), dtype)
        return lift_scalar_head(hist, scalar, jnp.zeros(1))[0].astype(dtype)

    def bias_init(key, shape, dtype=jnp.float32):
        del key, shape
        return lift_scalar_head(hist, jnp.zeros((1, 1)), jnp.zeros(1))[1].astype(dtype)

    return nn.Dense(hist.bins, kernel_init=kernel_init, bias_init=bias_init)


class TwinGrid(nn.Module):
    """An actor ``GridEncoder`` and a critic ``GridEncoder`` that share no weights.

    The actor's value head and the critic's logits head are computed and dropped (XLA removes
    them; their params get no gradient), so each tower has ``GridEncoder``'s params and a
    shared network's params copied into both (``twin_params``) compute the same function.
    """

    num_actions: int
    hidden_dim: int = 256
    num_layers: int = 2
    res_blocks: int = 0

    @nn.compact
    def __call__(self, obs):
        size = (self.num_actions, self.hidden_dim, self.num_layers)
        logits, _ = GridEncoder(*size, res_blocks=self.res_blocks, name="actor")(obs)
        _, value = GridEncoder(*size, res_blocks=self.res_blocks, name="critic")(obs)
        return logits, value


def twin_params(params):
    """A ``GridEncoder``'s params as ``TwinGrid``'s: the same weights in both towers, so the
    twin starts as the shared network's exact function (a warm start from a ``grid`` run)."""
    inner = params["params"]
    return {**params, "params": {"actor": inner, "critic": inner}}


def hl_params(params):
    """A ``GridEncoder``'s params as ``grid-hl``'s: the scalar value head (the last dense
    layer, kernel [H, 1]) lifted onto ``RETURN_HISTOGRAM``'s bins, every other weight kept, so
    the network starts as the scalar network's function (its value to within 1e-4 of a bin)."""
    inner = dict(params["params"])
    head = f"Dense_{max(int(k.split('_')[1]) for k in inner if k.startswith('Dense_'))}"
    kernel, bias = lift_scalar_head(RETURN_HISTOGRAM, inner[head]["kernel"], inner[head]["bias"])
    inner[head] = {"kernel": kernel, "bias": bias}
    return {**params, "params": inner}


def value_histogram_of(name: str) -> ValueHistogram | None:
    """The value histogram of the network ``--network name`` (None: a scalar value)."""
    return RETURN_HISTOGRAM if name == "grid-hl" else None


def make_network(
    name: str, num_actions: int, hidden_dim: int, num_layers: int, res_blocks: int = 0
) -> nn.Module:
    """The network selected by ``--network`` (``res_blocks``: ``--res-blocks``, grid ones)."""
    if name == "mlp":
        if res_blocks:
            raise ValueError("--res-blocks needs a grid network, not 'mlp'")
        return MLP(num_actions, hidden_dim, num_layers)
    if name == "grid":
        return GridEncoder(num_actions, hidden_dim, num_layers, res_blocks=res_blocks)
    if name == "grid-twin":
        return TwinGrid(num_actions, hidden_dim, num_layers, res_blocks=res_blocks)
    if name == "grid-hl":
        return GridEncoder(num_actions, hidden_dim, num_layers, value_histogram=RETURN_HISTOGRAM,
                           res_blocks=res_blocks)  # fmt: skip
    raise ValueError(f"unknown network {name!r}; choose 'mlp', 'grid', 'grid-twin' or 'grid-hl'")


def adapt_params(params, source: str, target: str, source_blocks=0, target_blocks=0,
                 template=None):  # fmt: skip
    """Params of a ``source`` network for a ``target`` one: unchanged where the two are the
    same, grown into both towers from ``grid`` to ``grid-twin`` (``twin_params``), the value
    head lifted from ``grid`` to ``grid-hl`` (``hl_params``), residual blocks added to a
    ``grid`` or ``grid-hl`` network (``grow_blocks``, from ``template``: the target's fresh
    init); a ``ValueError`` for any other pair (no other carries its function over)."""
    if source_blocks != target_blocks:
        if source != target or source not in ("grid", "grid-hl") or template is None:
            raise ValueError(f"residual blocks ({source_blocks} -> {target_blocks}) are added "
                             "only to a grid or grid-hl network of the same kind")  # fmt: skip
        if target_blocks < source_blocks:
            raise ValueError(f"a network of {source_blocks} residual blocks cannot start one "
                             f"of {target_blocks}: blocks are added, never removed")  # fmt: skip
        return grow_blocks(params, template, source_blocks)
    if source == target:
        return params
    if (source, target) == ("grid", "grid-twin"):
        return twin_params(params)
    if (source, target) == ("grid", "grid-hl"):
        return hl_params(params)
    raise ValueError(f"a {source!r} network's params cannot start a {target!r} network "
                     "(only grid -> grid-twin and grid -> grid-hl grow exactly)")  # fmt: skip


def grow_blocks(params, template, blocks: int):
    """A ``GridEncoder``'s params with ``blocks`` residual blocks as ``template``'s (its fresh
    init, more blocks): the new blocks as initialised, placed after the old ones, every other
    layer copied. A new block's last kernel is zero (``GridEncoder``), so the grown network
    computes the same function. Layers are ``Dense_i`` by creation order: the cell embedding
    and the convolution (0, 1), two per block, then the trunk and heads, which shift by two
    per new block."""
    inner, fresh = params["params"], template["params"]
    added = sum(k.startswith("Dense_") for k in fresh) - sum(k.startswith("Dense_") for k in inner)
    if added < 0 or added % 2 or any(not k.startswith("Dense_") for k in inner):
        raise ValueError(f"cannot grow a {len(inner)}-layer network into {len(fresh)} layers")
    old_end = 2 + 2 * blocks  # the first layer after the old blocks
    out = dict(fresh)
    for name, layer in inner.items():
        i = int(name.split("_")[1])
        new = name if i < old_end else f"Dense_{i + added}"
        if jax.tree.map(jnp.shape, layer) != jax.tree.map(jnp.shape, fresh[new]):
            raise ValueError(f"layer {name} does not fit the grown network's {new}")
        out[new] = layer
    return {**params, "params": out}
