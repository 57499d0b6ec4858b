"""Attention rollout and attention flow through the whole layer graph, for one output position.

Abnar & Zuidema (2020), "Quantifying Attention Flow in Transformers". Each attention sublayer becomes a
mixing matrix Â = 0.5·mean_heads(A) + 0.5·I (the identity stands for the residual connection), rows
renormalised. In an encoder-decoder the cross-attention sublayer keeps half of its residual and takes half
from the memory (the encoder's last layer), so the decoder's positions draw on the source tokens through
the encoder's layers and on the decoder's own input tokens.

*Rollout* multiplies the matrices: the sum over all paths of the products of their weights. *Flow* reads the
same weights as capacities of a directed graph and asks how much can flow from the output node to each input
node (maximum flow, computed by networkx). Both are approximations: they follow the attention weights only
and ignore the values, the output projections, the FFNs and the LayerNorms.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np

from transformer_viz.trace.record import Trace, check_trace, recorded_attention


def residual_mix(weights: np.ndarray) -> np.ndarray:
    """weights (heads, q_len, q_len) -> Â (q_len, q_len) = 0.5·mean over heads + 0.5·I, rows summing to 1."""
    mean = weights.mean(0)  # (q_len, q_len)
    mixed = 0.5 * mean + 0.5 * np.eye(len(mean))
    return mixed / mixed.sum(-1, keepdims=True)  # a row with no allowed key sums to 0.5 before this, never 0


def _mean_weights(trace: Trace, kind: str, layer: int) -> np.ndarray:
    return recorded_attention(trace, kind, layer, "weights")[0].double().numpy()  # (heads, q_len, k_len)


@dataclass(frozen=True)
class LayerGraph:
    """The mixing matrices of batch item 0 of a trace, layer by layer (counting from 0)."""

    encoder: tuple[np.ndarray, ...]  # Â of each encoder layer: (src_len, src_len); () for a decoder-only model
    decoder: tuple[np.ndarray, ...]  # Â of each decoder self-attention: (tgt_len, tgt_len)
    cross: tuple[np.ndarray, ...]  # each decoder layer's head-mean cross-attention: (tgt_len, src_len); ()

    @property
    def src_len(self) -> int:
        return self.cross[0].shape[1] if self.cross else 0

    @property
    def tgt_len(self) -> int:
        return self.decoder[0].shape[0]

    @property
    def input_nodes(self) -> slice:
        """The input tokens among rollout's and flow's (src_len + tgt_len,): the source, or a decoder-only model's
        one stream."""
        return slice(0, self.src_len) if self.cross else slice(0, None)

    @classmethod
    def of(cls, trace: Trace) -> LayerGraph:
        check_trace(trace)
        kinds = trace.attention_kinds()
        mixes = {kind: tuple(residual_mix(_mean_weights(trace, kind, i)) for i in range(trace.n_layers(kind)))
                 for kind in kinds if kind != "cross"}
        cross = tuple(_mean_weights(trace, "cross", i).mean(0) for i in range(trace.n_layers("cross"))) \
            if "cross" in kinds else ()
        return cls(mixes.get("encoder_self", ()), mixes["decoder_self"], cross)

    def check_position(self, position: int, layers: int | None) -> int:
        """The number of decoder layers to go through (default: all), after checking `position`."""
        if not 0 <= position < self.tgt_len:
            raise ValueError(f"position {position} is not a decoder position (0 to {self.tgt_len - 1}).")
        layers = len(self.decoder) if layers is None else layers
        if not 1 <= layers <= len(self.decoder):
            raise ValueError(f"layers must be from 1 to {len(self.decoder)}, got {layers}.")
        return layers


def rollout(graph: LayerGraph, position: int, layers: int | None = None) -> np.ndarray:
    """How much decoder position `position`, after `layers` decoder layers (default: all), draws on each input token.

    -> (src_len + tgt_len,): the source tokens first (none in a decoder-only model), then the decoder's input
    tokens; it sums to 1.
    """
    layers = graph.check_position(position, layers)
    src, tgt = graph.src_len, graph.tgt_len
    memory = np.eye(src)  # (src_len, src_len): each encoder position's share of each source token
    for mix in graph.encoder:
        memory = mix @ memory
    state = np.hstack([np.zeros((tgt, src)), np.eye(tgt)])  # (tgt_len, src_len + tgt_len)
    for layer in range(layers):
        state = graph.decoder[layer] @ state
        if graph.cross:
            from_memory = np.hstack([graph.cross[layer] @ memory, np.zeros((tgt, tgt))])
            state = 0.5 * state + 0.5 * from_memory
    return state[position]


def flow_network(graph: LayerGraph, layers: int) -> nx.DiGraph:
    """The layer graph as a network: nodes (side, layer, position) with side "src", "tgt" or "mid" (a decoder
    position between its self- and its cross-attention); edges point from a layer to the one below, their
    capacity the mixing weight."""
    network = nx.DiGraph()

    def connect(upper, lower, weights: np.ndarray) -> None:
        for i, j in zip(*np.nonzero(weights > 0), strict=True):
            network.add_edge((*upper, int(i)), (*lower, int(j)), capacity=float(weights[i, j]))

    for layer, mix in enumerate(graph.encoder, start=1):
        connect(("src", layer), ("src", layer - 1), mix)
    top = len(graph.encoder)
    for layer in range(1, layers + 1):
        mix = graph.decoder[layer - 1]
        if not graph.cross:
            connect(("tgt", layer), ("tgt", layer - 1), mix)
            continue
        connect(("mid", layer), ("tgt", layer - 1), mix)
        connect(("tgt", layer), ("mid", layer), 0.5 * np.eye(graph.tgt_len))
        connect(("tgt", layer), ("src", top), 0.5 * graph.cross[layer - 1])
    return network


def attention_flow(graph: LayerGraph, position: int, layers: int | None = None) -> np.ndarray:
    """The maximum flow from decoder position `position` after `layers` decoder layers (default: all) to each
    input token, one max-flow problem per token (networkx). -> (src_len + tgt_len,), laid out as `rollout`'s;
    0 for a token no path reaches (a later position, padding)."""
    layers = graph.check_position(position, layers)
    network = flow_network(graph, layers)
    output = ("tgt", layers, position)
    inputs = [("src", 0, j) for j in range(graph.src_len)] + [("tgt", 0, j) for j in range(graph.tgt_len)]
    reachable = nx.descendants(network, output) if output in network else set()
    return np.array([nx.maximum_flow_value(network, output, node) if node in reachable else 0.0
                     for node in inputs])
