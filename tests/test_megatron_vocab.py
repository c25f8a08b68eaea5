"""--megatron FILE with a tokenizer whose size is in its own files (SentencePiece, Hugging Face): refused in one line
saying what supplies it, and answered with the command line's --vocab-size or with --model config.json.

Source of truth: the file's arguments and the sizes given; exact."""

import contextlib
import io
import json

from symbolic.cli.entry import main

ARGS = (
    "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64 --max-position-embeddings 64 "
    "--micro-batch-size 1 --global-batch-size 8 --bf16 --position-embedding-type rope --tokenizer-type "
    "GPTSentencePieceTokenizer --tokenizer-model /data/t.model --make-vocab-size-divisible-by 128\n"
)


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_sentencepiece_size_refused_then_supplied(tmp_path):
    path = tmp_path / "args.txt"
    path.write_text(ARGS)
    code, out, err = run("estimate", "--megatron", str(path), "--gpus", "8", "--json")
    assert code == 2 and err.count("\n") == 1
    assert "--tokenizer-type GPTSentencePieceTokenizer" in err and "--vocab-size V beside --megatron" in err
    code, out, err = run("estimate", "--megatron", str(path), "--gpus", "8", "--vocab-size", "1000", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["megatron"]["overridden"][0].startswith("--vocab-size 1000 from the command line")
    # 1000 and 1100 padded to multiples of 128 x tp (1) as Megatron-LM pads them: 1024 and 1152 rows of h = 64 in
    # the one (tied) embedding matrix, bf16
    more = json.loads(run("estimate", "--megatron", str(path), "--gpus", "8", "--vocab-size", "1100", "--json")[1])
    assert more["stages"][0]["bytes"]["weights"] - report["stages"][0]["bytes"]["weights"] == 2 * 128 * 64
    code, out, err = run("estimate", "--megatron", str(path), "--gpus", "8", "--model", "tiny", "--json")
    assert code == 0, err
    assert json.loads(out)["config"]["model"] == "tiny"
