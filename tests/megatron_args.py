"""A small GPT as a line of Megatron-LM arguments (h 64 in 4 heads, vocabulary 128) and what mem4d's reader makes of
a file of them: the Megatron reader tests' common ground."""

from symbolic.readers.megatron import read


def small_gpt(*flags: str, layers: int = 2, seq: int = 64) -> str:
    """The small GPT of `layers` layers at sequence `seq`, then flags, as one line."""
    sizes = f"--num-layers {layers} --hidden-size 64 --num-attention-heads 4 --vocab-size 128 --seq-length {seq}"
    return " ".join((sizes, *flags)) + "\n"


def read_lines(tmp_path, *lines: str):
    """What the reader makes of tmp_path/args.txt holding lines."""
    path = tmp_path / "args.txt"
    path.write_text("".join(lines))
    return read(path)
