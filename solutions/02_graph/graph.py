"""Kata 02 — reference solution."""

import xtc.graphs.xtc.op as O
from xtc.graphs.xtc.graph import XTCGraph


def matmul_graph(I: int, J: int, K: int, dtype: str = "float32") -> XTCGraph:  # noqa: E741
    """A graph named "matmul" computing C = A @ B."""
    # Inputs are created outside the graph block: inside it they would become constants.
    a = O.tensor((I, K), dtype, name="A")
    b = O.tensor((K, J), dtype, name="B")
    with O.graph(name="matmul") as gb:
        O.matmul(a, b, name="C")
    return gb.graph


def matmul_relu_graph(I: int, J: int, K: int, dtype: str = "float32") -> XTCGraph:  # noqa: E741
    """A graph named "matmul_relu" computing R = relu(A @ B)."""
    a = O.tensor((I, K), dtype, name="A")
    b = O.tensor((K, J), dtype, name="B")
    with O.graph(name="matmul_relu") as gb:
        c = O.matmul(a, b, name="C")
        O.relu(c, name="R")
    return gb.graph
