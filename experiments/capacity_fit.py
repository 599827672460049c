"""Does a larger network generalise the search's corrections better? A distillation probe.

PPO guided by the search closes only a third of the fittable KL to its targets
(``target_noise.py``), the same at ``--guide-kl`` 1 and 3: on the states of each new rollout the
network does not carry over what it learned on the last ones. This probe asks whether capacity
changes that, before any long run: it searches the start's greedy states once (the teacher of
``--recipe guided``), trains students on KL(target || policy) alone, and reports the KL on
held-out states (other games, each searched ``--draws`` times, with the draws' noise floor).

Every student starts as the start's function exactly (``grow``): a wider cell embedding and
trunk get their old weights, new units read the old ones but write nothing at first (zero
outgoing weights), and each added residual 3x3 block ends in a zero layer, so it is the
identity. The students differ only in what they can become.

    uv run python experiments/capacity_fit.py --students 16,256,0 32,256,2 32,512,2
"""

from __future__ import annotations

import argparse

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np


def _dense(features: int, scale: float, name: str) -> nn.Dense:
    return nn.Dense(features, kernel_init=nn.initializers.orthogonal(scale), name=name)


class Student(nn.Module):
    """``network.GridEncoder`` with ``cell_dim`` channels, ``blocks`` residual 3x3 blocks after
    its 3x3 layer (each: 3x3 layer, ReLU, a zero-initialised 1x1 layer, added) and a
    ``hidden_dim`` trunk; its layers named so ``grow`` can map the start's into it."""

    num_actions: int
    cell_dim: int
    hidden_dim: int
    blocks: int
    num_layers: int = 2

    @nn.compact
    def __call__(self, obs):
        from hackmatrix_train.network import cells_with_player, neighbourhood_3x3

        x, batch, player = cells_with_player(obs)
        x = nn.relu(_dense(self.cell_dim, np.sqrt(2), "cell")(x))
        x = nn.relu(_dense(self.cell_dim, np.sqrt(2), "conv")(neighbourhood_3x3(x)))
        for i in range(self.blocks):
            h = nn.relu(_dense(self.cell_dim, np.sqrt(2), f"block{i}_a")(neighbourhood_3x3(x)))
            x = x + nn.Dense(self.cell_dim, kernel_init=nn.initializers.zeros,
                             name=f"block{i}_b")(h)  # fmt: skip
        x = x.reshape((*batch, 36 * self.cell_dim))
        vec = jnp.concatenate([player, obs.programs.astype(jnp.float32)], axis=-1)
        h = nn.relu(_dense(self.hidden_dim, np.sqrt(2), "trunk")(jnp.concatenate([x, vec], -1)))
        a, c = h, h
        for i in range(self.num_layers - 1):
            a = nn.relu(_dense(self.hidden_dim, np.sqrt(2), f"actor{i}")(a))
            c = nn.relu(_dense(self.hidden_dim, np.sqrt(2), f"critic{i}")(c))
        return _dense(self.num_actions, 0.01, "logits")(a), _dense(1, 1.0, "value")(c)[..., 0]


# the start's (GridEncoder, 2 layers) layers by creation order, and the student's name of each
START_NAMES = {"Dense_0": "cell", "Dense_1": "conv", "Dense_2": "trunk", "Dense_3": "actor0",
               "Dense_4": "critic0", "Dense_5": "logits", "Dense_6": "value"}  # fmt: skip


def rows_of(name: str, old: int, new: int, old_in: int) -> np.ndarray:
    """Where the start's input rows of layer ``name`` sit in the student's (``old``/``new``:
    the cell widths). The 3x3 layer reads 9 neighbours of ``old`` channels each, the trunk 36
    cells of ``old`` channels and then the player and program vector; other layers' old inputs
    come first."""
    if name == "conv":
        return np.array([s * new + c for s in range(9) for c in range(old)])
    if name == "trunk":
        cells = [k * new + c for k in range(36) for c in range(old)]
        return np.array(cells + list(range(36 * new, 36 * new + old_in - 36 * old)))
    return np.arange(old_in)


def grow(start: dict, template: dict, old_cell: int) -> dict:
    """The student's params (``template``: its fresh init) holding the start's function: each
    start kernel in its rows and first columns, the rows of new inputs zero (new units write
    nothing at first), new columns and blocks as initialised (a block's last layer is zero)."""
    new_cell = template["params"]["cell"]["kernel"].shape[1]
    out = jax.tree.map(np.array, template)
    for old_name, name in START_NAMES.items():
        kernel, bias = (np.asarray(start["params"][old_name][k]) for k in ("kernel", "bias"))
        k = out["params"][name]["kernel"]
        rows = rows_of(name, old_cell, new_cell, kernel.shape[0])
        new_rows = np.setdiff1d(np.arange(k.shape[0]), rows)
        k[new_rows, : kernel.shape[1]] = 0.0  # new inputs reach no old unit nor an output
        k[np.ix_(rows, np.arange(kernel.shape[1]))] = kernel
        out["params"][name]["bias"][: bias.shape[0]] = bias
    return jax.tree.map(jnp.asarray, out)


def make_steps(net, tx, held_obs, held_t, kl_rows):
    """``step(params, opt, obs, t) -> (params, opt, loss)``, one Adam step on the mean
    KL(target || policy), and ``held(params) -> (kl, differs)`` on the held-out states: the
    mean KL from each draw and how often the argmax is not the draws' mean's."""
    import optax
    from hackmatrix_train.expert_iteration import masked_log_policy

    mask = held_obs.action_mask

    def loss(params, obs, t):
        logits, _ = net.apply(params, obs)
        return kl_rows(masked_log_policy(logits, obs.action_mask), t, obs.action_mask).mean()

    @jax.jit
    def step(params, opt, obs, t):
        value, grad = jax.value_and_grad(loss)(params, obs, t)
        updates, opt = tx.update(grad, opt)
        return optax.apply_updates(params, updates), opt, value

    @jax.jit
    def held(params):
        logits, _ = net.apply(params, held_obs)
        kl = kl_rows(masked_log_policy(logits, mask), jnp.asarray(held_t), mask).mean()
        argmax = jnp.argmax(jnp.where(mask, logits, -jnp.inf), -1)
        return kl, (argmax != held_t.mean(0).argmax(-1)).mean()

    return step, held


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--students", nargs="+", default=["16,256,0", "32,256,2", "32,512,2"],
                   help="cell_dim,hidden_dim,blocks of each student")  # fmt: skip
    p.add_argument("--games", type=int, default=256)
    p.add_argument("--held-games", type=int, default=64)
    p.add_argument("--moves", type=int, default=128)
    p.add_argument("--draws", type=int, default=4, help="searches of each held-out state")
    p.add_argument("--epochs", type=int, default=24)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--minibatch", type=int, default=512)
    p.add_argument("--chunk", type=int, default=512)
    args = p.parse_args()

    import optax
    from hackmatrix_train.guided import log_of
    from target_noise import guided_teacher, pick, searched_states

    start, _, search = guided_teacher()

    def searched(games, seed, draws):
        return searched_states(start, search, games, args.moves, seed, draws, args.chunk,
                               seed * 100)  # fmt: skip

    train_obs, train_t = searched(args.games, 11, 1)
    held_obs, held_t = searched(args.held_games, 12, args.draws)
    train_t = train_t[0]
    held_mask = np.asarray(held_obs.action_mask)

    def kl_rows(log_q, t, mask):
        return jnp.sum(jnp.where(mask, t * (log_of(t) - log_q), 0.0), -1)

    floor = float(kl_rows(log_of(jnp.asarray(held_t.mean(0))), jnp.asarray(held_t),
                          held_mask).mean())  # fmt: skip
    print(f"train {len(train_t)} states (one search each), held-out {held_t.shape[1]} states x "
          f"{args.draws} searches; held-out floor {floor:.4f}", flush=True)  # fmt: skip

    for spec in args.students:
        cell, hidden, blocks = (int(v) for v in spec.split(","))
        net = Student(28, cell, hidden, blocks)
        template = net.init(jax.random.key(0), pick(train_obs, slice(0, 2)))
        params = grow(start.params, template, 16)
        tx = optax.adam(args.lr)
        opt = tx.init(params)
        size = sum(x.size for x in jax.tree.leaves(params))

        step, held = make_steps(net, tx, held_obs, held_t, kl_rows)

        start_logits, _ = start.apply_fn(start.params, pick(held_obs, slice(0, 64)))
        grown_logits, _ = net.apply(params, pick(held_obs, slice(0, 64)))
        same = float(jnp.abs(start_logits - grown_logits).max())
        rng = np.random.default_rng(0)
        n = len(train_t)
        for epoch in range(args.epochs + 1):
            if epoch % 4 == 0:
                kl, differs = held(params)
                print(f"student {spec} ({size:,} params; grown logits within {same:.1e} of "
                      f"the start's): epoch {epoch:2d} held-out KL {float(kl):.4f} (above the "
                      f"floor {float(kl) - floor:.4f}), argmax differs from the mean target's "
                      f"{float(differs):.1%}", flush=True)  # fmt: skip
            if epoch == args.epochs:
                break
            order = rng.permutation(n)
            for i in range(0, n - args.minibatch + 1, args.minibatch):
                rows = order[i : i + args.minibatch]
                params, opt, _ = step(params, opt, pick(train_obs, rows),
                                      jnp.asarray(train_t[rows]))  # fmt: skip


if __name__ == "__main__":
    main()
