"""The catalogue of right answers that differ from the reference, for every speed task.

A right answer is one a teacher would accept: it does the step's technique, computes the
problem, and has the loop nest the task's shape test asks; it differs from the reference
in what the stub and the lesson leave open (a loop order, a tile's shape, an axis, a split
point, a strategy class, a search space), written from the stub and the lesson alone,
never from solutions/ (the first answers of katas 09-11 are the ones test_learner_answers.py
and test_plugin.py held before). Where a size depends on the machine, the answer reads
this machine's float32 lanes as a learner would (`xtc.utils.cpu.cpu_info()`): as written,
every tile fits the registers of an AVX2 machine (16) and of an AVX-512 one (32).

Each answer is a function body planted at the top of its function in a copy of the
repository (repo_copy.py), as a learner would write it. A *round* takes one answer per
function, from every kata, and plants them in one copy: tests/test_right_answers.py runs
each round's numerics and shape tests on both backends, and `python -m
tools.flakecheck --answers` races each round's answers, reporting each one's
margin over its bar beside the reference's in the same runs. A speed test that runs the
learner's own search (katas 06, 07) needs that search written: the round plants a right
one (HELPERS) without judging it.

tests/test_learner_answers.py and tests/test_plugin.py plant their answers with `Answer`
and `plant`, and take their right answers of speed tasks from here. Not under pytest's
collection (no test_ prefix); test modules and flakecheck load it by path
(flakecheck.load_answers).
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

from tools.copy_runs import run_python
from xtc_katas.grade.repo_copy import copy_repository, learner_env
from xtc_katas.kata.manifest import find


@dataclass(frozen=True)
class Answer:
    """A learner's body for `function`, and what the tests selected by `select` say."""

    function: str
    body: str
    select: str  # a pytest -k expression: the tests that must judge this answer
    expected: tuple[str, ...] = ()  # words each wrong answer's failure must contain
    #: A right answer's one line: what makes it differ from the reference.
    label: str = ""


def plant(repo, kata: int, answer: Answer) -> None:
    """Put `answer.body` at the top of its function in the copy's stub."""
    stub = find(kata).stub_path(repo)
    source = stub.read_text()
    match = re.search(rf"def {answer.function}\(.*?\n(?=    \"\"\")", source, re.S)
    assert match, f"no def {answer.function} in {stub}"
    stub.write_text(source[: match.end()] + answer.body + source[match.end() :])


def judge(tmp_path, kata: int, answers: list[Answer], *args: str, isa: str = "") -> tuple[int, str]:
    """One pytest of kata `kata` in a copy holding `answers` (one per function), of the
    tests their `select` names; with `isa`, its kernels compile as for that ISA
    (XTC_KATAS_ISA): (exit code, output)."""
    functions = [a.function for a in answers]
    assert len(set(functions)) == len(functions), "one answer per function in a round"
    repo = copy_repository(tmp_path)
    for answer in answers:
        plant(repo, kata, answer)
    select = " or ".join(f"({a.select})" for a in answers)
    env = learner_env(**({"XTC_KATAS_ISA": isa} if isa else {}))
    args = (f"katas/{find(kata).id}", "-k", select, "-rfE", *args)
    return run_python(repo, "-m", "pytest", *args, env=env, timeout=900)


def failed_tests(out: str) -> list[str]:
    """The names of the tests a pytest output says failed or errored."""
    return re.findall(r"^(?:FAILED|ERROR) \S+::(\S+)", out, re.M)


def body(*lines: str) -> str:
    return "".join(f"    {line}\n" for line in lines) + "    return\n"


def spec(text: str) -> str:
    return f"    return {text}\n"


def code(text: str) -> str:
    """A function body written as a block (dedented here, indented as the stub's)."""
    return textwrap.indent(textwrap.dedent(text).strip("\n"), "    ") + "\n"


#: This machine's float32 lanes, read as the lessons say (8 on AVX2, 16 on AVX-512).
LANES = ("from xtc.utils.cpu import cpu_info", 'lanes = cpu_info()["vsize"]["float32"]')


def lanes_spec(text: str) -> str:
    """A spec that sizes its tiles from `lanes`."""
    return body(*LANES)[: -len("    return\n")] + spec(text)


# --- shared by the wrong and right answers of katas 10 and 11 (test_learner_answers.py) ---

GEMM_TILES = (
    'sch.strip_mine("i", {"i1": 32})',
    'sch.strip_mine("j", {"j1": 32})',
    'sch.strip_mine("k", {"k1": 4})',
)
PERMUTED = (
    *GEMM_TILES,
    'sch.interchange(["i", "j", "k", "i1", "k1", "j1"])',
    'sch.vectorize(["j1"])',
)
CONV_TILE = ('sch.strip_mine("w", {"w1": 4})', 'sch.strip_mine("f", {"f1": 16})')
CONV_ORDER = 'sch.interchange(["h", "b", "w", "f", "r", "s", "c", "w1", "f1"])'
CONV = (*CONV_TILE, CONV_ORDER, 'sch.unroll({"w1": 4})', 'sch.vectorize(["f1"])')


# --- the catalogue ---------------------------------------------------------------------

#: A -k expression per function whose name is a prefix of another's in its kata.
SELECT = {"schedule_conv": "schedule_conv and not parallel"}


def right(function: str, label: str, text: str) -> Answer:
    return Answer(function, text, SELECT.get(function, function), label=label)


def tile(rows: int | str, width: int | str, order=("i", "j", "k"), *more: str) -> str:
    """Kata 04's register tile of `rows` x `width` (an int or an expression of `lanes`),
    the loops outside k in `order`."""
    uses_lanes = "lanes" in f"{rows}{width}"
    return body(
        *(LANES if uses_lanes else ()),
        f'sch.strip_mine("i", {{"i1": {rows}}})',
        f'sch.strip_mine("j", {{"j1": {width}}})',
        f"sch.interchange({[*order, 'i1', 'j1']!r})".replace("'", '"'),
        f'sch.unroll({{"i1": {rows}}})',
        'sch.vectorize(["j1"])',
        *more,
    )


def tile_spec(rows: int | str, width: int | str, outer: str = "", first="i") -> str:
    """Kata 05's register tile spec; `outer`: the annotations of its first loop."""
    keys = ("i", "j") if first == "i" else ("j", "i")
    loops = ", ".join(f'"{key}": {{{outer if n == 0 else ""}}}' for n, key in enumerate(keys))
    rows_key = f'f"i#{{{rows}}}"' if isinstance(rows, str) else f'"i#{rows}"'
    width_key = f'f"j#{{{width}}}"' if isinstance(width, str) else f'"j#{width}"'
    text = (
        f'{{{loops}, "k": {{}}, {rows_key}: {{"unroll": True}}, '
        f'{width_key}: {{"vectorize": True}}}}'
    )
    return lanes_spec(text) if "lanes" in f"{rows}{width}" else spec(text)


PARALLEL = '"parallelize": True'

FUSE = '"fuse_consumer": True'

#: Vectorized tiles with k outermost (issue 59): LLVM unrolls the loops inside k by itself
#: and keeps all 4x32 of C in registers, 16 ymm on AVX2, which spill (22-28 stack
#: accesses a step, both backends); on AVX-512 they are 8 zmm and fit. Raced on Zen 3
#: (AVX2), under load: 0.63-0.84x the reference (MLIR, and TVM's tile of 16), on the
#: vectorize task's bar, whose verdict flipped between runs; TVM's one-vector tile read
#: 1.03-1.24x. So the shape test tells the spill where it spills, every run: right
#: answers on AVX-512, wrong ones on AVX2 (tests/test_right_answers.py judges both; not
#: in RIGHT, which is judged on the host's own ISA).
K_OUTER: dict[int, tuple[Answer, ...]] = {
    4: (
        right(
            "schedule_vectorize",
            "k outermost, one vector of this machine's lanes a tile: k, i, j, j1",
            body(
                *LANES,
                'sch.strip_mine("j", {"j1": lanes})',
                'sch.interchange(["k", "i", "j", "j1"])',
                'sch.vectorize(["j1"])',
            ),
        ),
        right(
            "schedule_vectorize",
            "k outermost, a vector tile of 16: k, i, j, j1",
            body(
                'sch.strip_mine("j", {"j1": 16})',
                'sch.interchange(["k", "i", "j", "j1"])',
                'sch.vectorize(["j1"])',
            ),
        ),
    ),
    5: (
        right(
            "vectorize_spec",
            "k first, one vector of this machine's lanes a tile",
            lanes_spec('{"k": {}, "i": {}, "j": {}, f"j#{lanes}": {"vectorize": True}}'),
        ),
        right(
            "vectorize_spec",
            "k first, a vector tile of 16",
            spec('{"k": {}, "i": {}, "j": {}, "j#16": {"vectorize": True}}'),
        ),
    ),
}

#: kata -> function -> its right answers; round n plants the n-th answer of each.
RIGHT: dict[int, dict[str, tuple[Answer, ...]]] = {
    4: {
        "schedule_interchange": (
            right(
                "schedule_interchange",
                "k outermost: k, i, j",
                body('sch.interchange(["k", "i", "j"])'),
            ),
            right(
                "schedule_interchange",
                "j in tiles of 16, the tile innermost and not vectorized: i, k, j, j1",
                body(
                    'sch.strip_mine("j", {"j1": 16})',
                    'sch.interchange(["i", "k", "j", "j1"])',
                ),
            ),
        ),
        "schedule_vectorize": (
            right(
                "schedule_vectorize",
                "a vector tile of 32, all of J",
                body(
                    'sch.strip_mine("j", {"j1": 32})',
                    'sch.interchange(["i", "k", "j", "j1"])',
                    'sch.vectorize(["j1"])',
                ),
            ),
            right(
                "schedule_vectorize",
                "a vector tile of this machine's lanes (8 on AVX2, 16 on AVX-512)",
                body(
                    *LANES,
                    'sch.strip_mine("j", {"j1": lanes})',
                    'sch.interchange(["i", "k", "j", "j1"])',
                    'sch.vectorize(["j1"])',
                ),
            ),
        ),
        "schedule_register_tile": (
            right("schedule_register_tile", "a 2x32 tile", tile(2, 32)),
            right(
                "schedule_register_tile",
                "4 rows x 2 vectors (4x16 on AVX2, 4x32 on AVX-512): 8 accumulators",
                tile(4, "2 * lanes"),
            ),
            right(
                "schedule_register_tile", "a 4x16 tile, j's loop outside i's", tile(4, 16, "jik")
            ),
        ),
        "schedule_split": (
            right(
                "schedule_split",
                "the main part one vector tile of 32, segments j0/j1",
                body(
                    'sch.split("j", {"j0": 0, "j1": 32})',
                    'sch.interchange(["i", "k", "j0", "j1"])',
                    'sch.strip_mine("j", {"jj": 32}, root="./j0")',
                    'sch.interchange(["j", "jj"], root="./j0")',
                    'sch.vectorize(["jj"], root="./j0")',
                    'sch.interchange(["j"], root="./j1")',
                ),
            ),
            right(
                "schedule_split",
                "the main part in tiles of this machine's lanes",
                body(
                    *LANES,
                    'sch.split("j", {"j0": 0, "j1": 32})',
                    'sch.interchange(["i", "k", "j0", "j1"])',
                    'sch.strip_mine("j", {"jv": lanes}, root="./j0")',
                    'sch.interchange(["j", "jv"], root="./j0")',
                    'sch.vectorize(["jv"], root="./j0")',
                    'sch.interchange(["j"], root="./j1")',
                ),
            ),
        ),
        "schedule_parallel": (
            right(
                "schedule_parallel",
                "a 2x32 tile, j's loop outside i's, j parallel",
                tile(2, 32, "jik", 'sch.parallelize(["j"])'),
            ),
            right(  # a teacher's: B read once per 32 rows, its 64 KiB panels from L2
                "schedule_parallel",
                "blocks of 32 rows outside j, a 2x32 tile inside k, i parallel",
                body(
                    'sch.strip_mine("i", {"i0": 32, "i1": 2})',
                    'sch.strip_mine("j", {"j1": 32})',
                    'sch.interchange(["i", "j", "i0", "k", "i1", "j1"])',
                    'sch.parallelize(["i"])',
                    'sch.unroll({"i1": 2})',
                    'sch.vectorize(["j1"])',
                ),
            ),
            right(
                "schedule_parallel",
                "4 rows x 2 vectors, i parallel",
                tile(4, "2 * lanes", "ijk", 'sch.parallelize(["i"])'),
            ),
            right(
                "schedule_parallel",
                "8 rows x 1 vector (8x8 on AVX2, 8x16 on AVX-512), i parallel",
                tile(8, "lanes", "ijk", 'sch.parallelize(["i"])'),
            ),
        ),
    },
    5: {
        "vectorize_spec": (
            right(
                "vectorize_spec",
                "a vector tile of 32, all of J",
                spec('{"i": {}, "k": {}, "j": {}, "j#32": {"vectorize": True}}'),
            ),
            right(
                "vectorize_spec",
                "a vector tile of this machine's lanes",
                lanes_spec('{"i": {}, "k": {}, "j": {}, f"j#{lanes}": {"vectorize": True}}'),
            ),
        ),
        "register_tile_spec": (
            right("register_tile_spec", "a 2x32 tile", tile_spec(2, 32)),
            right("register_tile_spec", "4 rows x 2 vectors", tile_spec(4, "2 * lanes")),
            right("register_tile_spec", "a 4x16 tile, j before i", tile_spec(4, 16, first="j")),
        ),
        "split_spec": (
            right(
                "split_spec",
                "the main part one vector tile of 32, the remainder empty",
                spec('{"i": {}, "k": {}, "j[0:32]": {"j#32": {"vectorize": True}}, "j[32:]": {}}'),
            ),
            # A closed remainder, "j[32:36]", is as right, but XTC 0.3.2's descript rejects
            # it ("Splitting of j unachieved (stops at 36)"): it knows no axis's size unless
            # descript_scheduler is given abstract_dim_sizes, which the harness does not give.
            right(
                "split_spec",
                "tiles of this machine's lanes",
                lanes_spec(
                    '{"i": {}, "k": {}, "j[0:32]": {f"j#{lanes}": {"vectorize": True}},'
                    ' "j[32:]": {}}'
                ),
            ),
        ),
        "parallel_spec": (
            right(
                "parallel_spec",
                "a 4x16 tile, j before i, j parallel",
                tile_spec(4, 16, PARALLEL, first="j"),
            ),
            right(
                "parallel_spec",
                "4 rows x 2 vectors, i parallel",
                tile_spec(4, "2 * lanes", PARALLEL),
            ),
            right(
                "parallel_spec",
                "8 rows x 1 vector, i parallel",
                tile_spec(8, "lanes", PARALLEL),
            ),
        ),
    },
    6: {
        "candidate_specs": (
            right(
                "candidate_specs",
                "rows 1, 2, 4 x widths 16, 32, those that fit the registers",
                code(
                    """
                    import itertools
                    from xtc.utils.cpu import cpu_info
                    lanes = cpu_info()["vsize"]["float32"]
                    registers = 32 if lanes >= 16 else 16
                    specs = []
                    for rows, width in itertools.product((1, 2, 4), (16, 32)):
                        vectors = width // lanes
                        if rows * vectors + vectors + 1 > registers:
                            continue  # spills
                        spec = {"i": {}, "j": {}, "k": {}}
                        if rows > 1:
                            spec[f"i#{rows}"] = {"unroll": True}
                        spec[f"j#{width}"] = {"vectorize": True}
                        specs.append((f"{rows}x{width}", spec))
                    return specs
                    """
                ),
            ),
            right(
                "candidate_specs",
                "rows 2, 4 x widths 1 and 2 vectors x orders ijk, jik",
                code(
                    """
                    import itertools
                    from xtc.utils.cpu import cpu_info
                    lanes = cpu_info()["vsize"]["float32"]
                    registers = 32 if lanes >= 16 else 16
                    specs = []
                    for rows, vectors, order in itertools.product(
                        (2, 4), (1, 2), ("ijk", "jik")
                    ):
                        if rows * vectors + vectors + 1 > registers:
                            continue
                        spec = {axis: {} for axis in order}
                        spec[f"i#{rows}"] = {"unroll": True}
                        spec[f"j#{vectors * lanes}"] = {"vectorize": True}
                        specs.append((f"{rows}x{vectors * lanes} {order}", spec))
                    return specs
                    """
                ),
            ),
            right(
                "candidate_specs",
                "a hand-written list: vectorized only, 2x16, 4x16, 2x32",
                code(
                    """
                    def tile(rows, width):
                        return {"i": {}, "j": {}, "k": {}, f"i#{rows}": {"unroll": True},
                                f"j#{width}": {"vectorize": True}}
                    return [
                        ("vectorized i,k,j", {"i": {}, "k": {}, "j": {},
                                              "j#16": {"vectorize": True}}),
                        ("2x16", tile(2, 16)),
                        ("4x16", tile(4, 16)),
                        ("2x32", tile(2, 32)),
                    ]
                    """
                ),
            ),
        ),
    },
    7: {
        "make_strategy": (
            right(
                "make_strategy",
                "Strategy_PPRPRPvr with this machine's registers and caches",
                code(
                    """
                    from xtc.search.strategies import Strategy_PPRPRPvr
                    from xtc.utils.cpu import cpu_info
                    lanes = cpu_info()["vsize"]["float32"]
                    return Strategy_PPRPRPvr(
                        graph, vec_size=lanes, max_unroll=256, threads=1,
                        vreg_num=32 if lanes >= 16 else 16,
                        l1_size=32 * 1024, l2_size=512 * 1024,
                    )
                    """
                ),
            ),
            right(
                "make_strategy",
                "Strategy_PPRPRPv, max_unroll 64",
                code(
                    """
                    from xtc.search.strategies import Strategy_PPRPRPv
                    from xtc.utils.cpu import cpu_info
                    lanes = cpu_info()["vsize"]["float32"]
                    return Strategy_PPRPRPv(graph, vec_size=lanes, max_unroll=64, threads=1)
                    """
                ),
            ),
            right(
                "make_strategy",
                "Strategy_PPRPRPvr with its default filters",
                code(
                    """
                    from xtc.search.strategies import Strategy_PPRPRPvr
                    from xtc.utils.cpu import cpu_info
                    return Strategy_PPRPRPvr(
                        graph, vec_size=cpu_info()["vsize"]["float32"], threads=1
                    )
                    """
                ),
            ),
        ),
    },
    8: {
        # The lesson: parallelize where it pays, on MLIR timed with and without. Parallel on
        # MLIR too, both read 1.13-1.17 over the 2-thread bar under a hog (0.32-0.49x numpy,
        # the sequential reference 0.56-0.86x; AMD EPYC family 25 model 1).
        "schedule_large": (
            right(
                "schedule_large",
                "Goto's layers as a spec: 4 rows x 2 vectors, A and B packed, j blocks outermost, "
                "parallel on TVM only",
                code(
                    """
                    from xtc.schedules.descript import descript_scheduler
                    from xtc.utils.cpu import cpu_info
                    lanes = cpu_info()["vsize"]["float32"]
                    rows, width = 4, 2 * lanes  # 8 accumulators, 11 registers
                    parallel = threads > 1 and "tvm" in type(sch.backend).__module__
                    spec = {
                        "j": {"parallelize": True} if parallel else {},
                        "k": {"pack": (1, None, True)},  # B's 256x512 panel: L2
                        "i": {"pack": (0, None, True)},  # A's 64x256 block
                        "j#512": {},
                        "i#64": {},
                        "k#256": {},
                        "k#4": {"unroll": True},
                        f"i#{rows}": {"unroll": True},
                        f"j#{width}": {"vectorize": True},
                    }
                    descript_scheduler(
                        scheduler=sch, node_name="C", abstract_dims=["i", "j", "k"], spec=spec
                    )
                    return
                    """
                ),
            ),
            right(
                "schedule_large",
                "a 6-row kernel split at the top (1008 + 16 rows, 4 rows last), unpacked, "
                "parallel on TVM only",
                code(
                    """
                    from xtc.schedules.descript import descript_scheduler
                    from xtc.utils.cpu import cpu_info
                    lanes = cpu_info()["vsize"]["float32"]
                    width = 2 * lanes  # 6 rows: 12 accumulators, 15 registers
                    parallel = threads > 1 and "tvm" in type(sch.backend).__module__

                    def part(height, rows):
                        return {
                            "j": {"parallelize": True} if parallel else {},
                            "k": {},
                            f"i#{height}": {},
                            "j#256": {},
                            "k#256": {},
                            "k#4": {"unroll": True},
                            f"i#{rows}": {"unroll": True},
                            f"j#{width}": {"vectorize": True},
                        }

                    spec = {"i[0:1008]": part(1008, 6), "i[1008:]": part(16, 4)}
                    descript_scheduler(
                        scheduler=sch, node_name="C", abstract_dims=["i", "j", "k"], spec=spec
                    )
                    return
                    """
                ),
            ),
        ),
    },
    9: {
        "schedule_fused": (
            right(
                "schedule_fused",
                "a 2x16 tile fused at i",
                tile(2, 16, "ijk", 'sch.fuse_consumer_at("i")'),
            ),
            right(
                "schedule_fused",
                "8 rows x 1 vector fused at i",
                tile(8, "lanes", "ijk", 'sch.fuse_consumer_at("i")'),
            ),
        ),
        "fused_spec": (
            right("fused_spec", "a 2x32 tile fused at i", tile_spec(2, 32, FUSE)),
            right("fused_spec", "8 rows x 1 vector fused at i", tile_spec(8, "lanes", FUSE)),
        ),
    },
    10: {},  # below: three staircases, one per round
    11: {
        "schedule_conv": (
            # An h x f tile: each unrolled step reads its own row of the image.
            right(
                "schedule_conv",
                "an h x f tile (4 rows of the output)",
                body(
                    'sch.strip_mine("h", {"h1": 4})',
                    'sch.strip_mine("f", {"f1": 16})',
                    'sch.interchange(["b", "h", "w", "f", "r", "s", "c", "h1", "f1"])',
                    'sch.unroll({"h1": 4})',
                    'sch.vectorize(["f1"])',
                ),
            ),
            right(
                "schedule_conv",
                "the w x f tile with f's loop outside w's",
                body(
                    *CONV_TILE,
                    'sch.interchange(["h", "b", "f", "w", "r", "s", "c", "w1", "f1"])',
                    'sch.unroll({"w1": 4})',
                    'sch.vectorize(["f1"])',
                ),
            ),
            right(
                "schedule_conv",
                "the w x f tile, the reductions in the order c, r, s",
                body(
                    *CONV_TILE,
                    'sch.interchange(["h", "b", "w", "f", "c", "r", "s", "w1", "f1"])',
                    'sch.unroll({"w1": 4})',
                    'sch.vectorize(["f1"])',
                ),
            ),
        ),
        "schedule_conv_parallel": (
            right(
                "schedule_conv_parallel",
                "the w x f tile, h parallel",
                body(*CONV, 'sch.parallelize(["h"])'),
            ),
            right(
                "schedule_conv_parallel",
                "the w x f tile with f's loop outside w's, h parallel",
                body(
                    *CONV_TILE,
                    'sch.interchange(["h", "b", "f", "w", "r", "s", "c", "w1", "f1"])',
                    'sch.unroll({"w1": 4})',
                    'sch.vectorize(["f1"])',
                    'sch.parallelize(["h"])',
                ),
            ),
            right(
                "schedule_conv_parallel",
                "an h x f tile of 4 rows, the blocks of rows parallel",
                body(
                    'sch.strip_mine("h", {"h1": 4})',
                    'sch.strip_mine("f", {"f1": 16})',
                    'sch.interchange(["h", "b", "w", "f", "r", "s", "c", "h1", "f1"])',
                    'sch.unroll({"h1": 4})',
                    'sch.vectorize(["f1"])',
                    'sch.parallelize(["h"])',
                ),
            ),
        ),
    },
}


def gemm_staircase(blocks: list[str], label: str, tiles: str = "i1 j1 k1") -> dict:
    """Kata 10's six steps on the stub's 32x32 blocks (k by 4): `blocks` the order of the
    loops over blocks (k last), `tiles` the names of the tiles of i, j and k; each step
    keeps the previous."""
    i1, j1, k1 = tiles.split()
    outer, last = blocks[0], blocks[-2]  # the outermost loop, the last over blocks before k
    made = tuple(
        f'sch.strip_mine("{axis}", {{"{tile}": {size}}})'
        for axis, tile, size in (("i", i1, 32), ("j", j1, 32), ("k", k1, 4))
    )
    vectorize = f'sch.vectorize(["{j1}"])'
    blocking = (*made, f"sch.interchange({[*blocks, k1, i1, j1]!r})")
    permuted = (*made, f"sch.interchange({[*blocks, i1, k1, j1]!r})", vectorize)
    packed = (*permuted, 'sch.pack_at("j", 1)')
    cached = (*packed, f'sch.buffer_at("{last}")', f'sch.unroll({{"{k1}": 4}})')
    steps = {
        "gemm_blocking": blocking,
        "gemm_vectorize": (*blocking, vectorize),
        "gemm_permute": permuted,
        "gemm_pack": packed,
        "gemm_write_cache": cached,
        "gemm_parallel": (*cached, f'sch.parallelize(["{outer}"])'),
    }
    return {
        function: right(function, label, body(*(line.replace("'", '"') for line in lines)))
        for function, lines in steps.items()
    }


# Other block sizes are not right: the stub asks for 32x32 (loop_nests.BLOCK).
STAIRCASES = [
    gemm_staircase(["j", "i", "k"], "32x32 blocks, the loop over columns of blocks outermost"),
    gemm_staircase(["i", "j", "k"], "rows of blocks outermost, tiles named ii, jj, kk", "ii jj kk"),
]
RIGHT[10] = {
    function: tuple(staircase[function] for staircase in STAIRCASES) for function in STAIRCASES[0]
}

#: Right answers to tasks without a speed test of their own that a speed test runs: the
#: learner's search (kata 06's explore, kata 07's explore_strategy). Planted with every
#: round of their kata, never judged there.
HELPERS: dict[int, tuple[Answer, ...]] = {
    6: (
        Answer(
            "explore",
            code(
                """
                import tempfile
                from xtc.schedules.descript import descript_scheduler
                with tempfile.TemporaryDirectory() as scratch:
                    for index, (name, spec) in enumerate(specs):
                        try:
                            backend = Backend(graph)
                            scheduler = backend.get_scheduler()
                            descript_scheduler(scheduler=scheduler, node_name="C",
                                               abstract_dims=["i", "j", "k"], spec=spec)
                            compiler = backend.get_compiler(dump_file=f"{scratch}/c{index}",
                                                            shared_lib=True)
                            module = compiler.compile(scheduler.schedule())
                            evaluator = module.get_evaluator(repeat=5, min_repeat_ms=20)
                            times, code, message = evaluator.evaluate()
                            if code != 0 or not times:
                                raise RuntimeError(message)
                            percent = 100.0 * graph.ops_count() / min(times) / peak_fmas_per_s
                        except Exception:
                            percent = 0.0
                        yield index, len(specs), name, percent
                return
                """
            ),
            "explore",
        ),
    ),
    7: (
        Answer(
            "explore_strategy",
            code(
                """
                import tempfile
                samples = [list(sample) for sample in strategy.sample(num, seed)]
                with tempfile.TemporaryDirectory() as scratch:
                    for index, sample in enumerate(samples):
                        try:
                            backend = Backend(graph)
                            scheduler = backend.get_scheduler()
                            strategy.generate(scheduler, sample)
                            compiler = backend.get_compiler(dump_file=f"{scratch}/s{index}",
                                                            shared_lib=True)
                            module = compiler.compile(scheduler.schedule())
                            evaluator = module.get_evaluator(repeat=5, min_repeat_ms=20)
                            times, code, message = evaluator.evaluate()
                            if code != 0 or not times:
                                raise RuntimeError(message)
                            percent = 100.0 * graph.ops_count() / min(times) / peak_fmas_per_s
                        except Exception:
                            percent = 0.0
                        yield index, len(samples), sample, percent
                return
                """
            ),
            "explore_strategy",
        ),
    ),
}


@dataclass(frozen=True)
class Round:
    """One answer per function, from every kata of the round, planted in one copy."""

    number: int
    answers: tuple[tuple[int, Answer], ...]  # (kata, answer)

    @property
    def katas(self) -> list[int]:
        return sorted({kata for kata, _ in self.answers})

    def plant(self, repo: Path) -> None:
        for kata, answer in self.answers:
            plant(repo, kata, answer)
        for kata in self.katas:
            for helper in HELPERS.get(kata, ()):
                plant(repo, kata, helper)

    def paths(self) -> list[str]:
        return [f"katas/{find(kata).id}" for kata in self.katas]

    def select(self) -> str:
        """The -k expression of every answer's tests (never a helper's)."""
        return " or ".join(f"({answer.select})" for _, answer in self.answers)

    def answer_of(self, kata: int, test: str) -> Answer | None:
        """The answer a test of `kata` named `test` judges: the longest function named in
        it (schedule_conv_parallel, not schedule_conv)."""
        found = [a for k, a in self.answers if k == kata and a.function in test]
        return max(found, key=lambda a: len(a.function), default=None)


def rounds(katas: set[int] | None = None) -> list[Round]:
    """The catalogue in rounds: round n holds the n-th answer of every function (of
    `katas`, default all) that has one."""
    chosen = {k: fs for k, fs in RIGHT.items() if katas is None or k in katas}
    depth = max((len(answers) for fs in chosen.values() for answers in fs.values()), default=0)
    found = []
    for n in range(depth):
        answers = tuple(
            (kata, answers[n])
            for kata, functions in chosen.items()
            for answers in functions.values()
            if n < len(answers)
        )
        found.append(Round(n, answers))
    return found
