"""Kata 02 — graphs: describe the computation as an XTC dataflow graph.

Fill in the two functions below, then run:  pytest katas/02_graph
The lesson is in README.md next to this file; `xtc-katas hint 2` gives hints one by one.
"""

import xtc.graphs.xtc.op as O  # noqa: F401 - you will need it
from xtc.graphs.xtc.graph import XTCGraph


def matmul_graph(I: int, J: int, K: int, dtype: str = "float32") -> XTCGraph:  # noqa: E741
    """A graph named "matmul" computing C = A @ B.

    Inputs: A of shape (I, K) and B of shape (K, J), both of `dtype`.
    One node: a matmul named "C".

    Primitives (README.md, "XTC's primitives"): O.tensor(shape, dtype, name=...) declares
    a tensor; `with O.graph(name=...) as gb:` records the operator calls made inside it,
    and gb.graph is the result; operators such as O.transpose(x, name="T") return a
    tensor. Where a tensor is declared decides whether it is an input or a constant.
    """
    raise NotImplementedError


def matmul_relu_graph(I: int, J: int, K: int, dtype: str = "float32") -> XTCGraph:  # noqa: E741
    """A graph named "matmul_relu" computing R = relu(A @ B).

    Same inputs as matmul_graph; two nodes in this order: a matmul "C", then a relu "R"
    that reads the matmul's result. An operator's result is a tensor that the next
    operator can take, as O.relu(O.transpose(x)) would.
    """
    raise NotImplementedError
